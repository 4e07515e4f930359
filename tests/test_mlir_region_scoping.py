"""SSA names are scoped by region (issue 21, defect 2), on real artifacts that reuse a name.

Triton's printer names values per region, so sibling regions reuse names: `%97` in the K
loop and again in the scf.if after it, the K loop's induction variable `%acc_80` and the
peeled tt.dot in the epilogue's scf.if, `^bb0(%arg5, %arg6)` in each tt.reduce, `%17` in
each of two loops. A use sees the definitions of its own region and of the regions around
it, never a sibling's; both readers (fast and lark) must resolve it so.
"""

from __future__ import annotations

import re
import tarfile
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import FIXTURES, rule_findings

from irscope.ir.layouts.graph import LayoutFacts
from irscope.ir.opgraph import ValueFlow
from irscope.parsers.mlir_parser import parse_mlir
from irscope.rules.irs103_narrow_lds_access import NarrowLdsAccess
from irscope.rules.irs301_lds_round_trip import LdsRoundTrip
from irscope.rules.irs302_convert_before_store import ConvertBeforeStore

READERS = ("fast", "lark")
CACHES = FIXTURES / "caches"
GEMM_3_2 = CACHES / "triton-3.2/PEV-yJA86q2f6bdhrQSNOFgbgpZjR-pcQMyBRnShKOo/matmul_kernel.ttgir"  # gfx942
GEMM_3_6 = CACHES / "triton-3.6/2H7QZZJCBRF7MB7EWSMEQHOAMN3KQHEXPGT3MWR3XY4FNHGIPUEA/matmul_kernel.ttgir"  # gfx942
SOFTMAX_3_2 = CACHES / "triton-3.2/8IrGgiROTppKLTs0i0aPaIGsh4aGxV7Mo2yJ28oEox0/softmax_kernel.ttgir"  # sm_90


@lru_cache(maxsize=None)
def parsed(path: Path, reader: str = "fast"):
    return parse_mlir(path.read_text(), str(path), reader)


def _defines_a_name_twice(path: Path) -> bool:
    names = Counter(v.name for v in parsed(path).values if v.kind != "undefined")
    return any(n > 1 for n in names.values())


REUSING = [p for p in sorted(FIXTURES.rglob("*")) if p.suffix in (".ttir", ".ttgir") and _defines_a_name_twice(p)]


def test_the_fixtures_reuse_names_in_sibling_regions():
    assert len(REUSING) >= 40
    assert {GEMM_3_2, GEMM_3_6, SOFTMAX_3_2} <= set(REUSING)


def sees(module, user, vid: int) -> bool:
    """Whether `user` is where MLIR lets it see the value: in the region that defines it, or nested in it."""
    value = module.values[vid]
    holder = module.ops[value.owner].parent if value.kind == "result" else value.owner  # op whose region defines it
    if holder is None or holder < 0:  # the top level
        return True
    parent = user.parent
    while parent is not None:
        if parent == holder:
            return True
        parent = module.ops[parent].parent
    return False


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("path", REUSING, ids=lambda p: f"{p.parent.parent.name}-{p.parent.name[:8]}-{p.name}")
def test_every_use_sees_its_definition(path, reader):
    module = parsed(path, reader)
    for op in module.ops:
        for vid in op.operands:
            value = module.values[vid]
            assert value.kind != "undefined", (op.line, value.name)
            assert sees(module, op, vid), f"line {op.line} uses {value.name} of line {value.line}, a sibling region's"


def defining_line(module, op, position: int = 0) -> int:
    return module.values[op.operands[position]].line


def op_at(module, line: int):
    (op,) = [op for op in module.ops if op.line == line]
    return op


@pytest.mark.parametrize("reader", READERS)
def test_a_name_redefined_in_the_epilogue_if_resolves_there(reader):
    # 3.2 gfx942 GEMM: the K loop's `%97 = tt.addptr %arg11, %cst_0` (line 97), read by the
    # `tt.load %97` of line 104; after the loop `%78 = scf.if` holds the peeled iteration,
    # `%97 = tt.dot %76, %77, %74#0` (line 127), and its `scf.yield %97` (line 128).
    module = parsed(GEMM_3_2, reader)
    load, yield_ = op_at(module, 104), op_at(module, 128)
    assert load.canonical_name == "tt.load" and defining_line(module, load) == 97
    assert yield_.canonical_name == "scf.yield" and defining_line(module, yield_) == 127
    assert module.defining_op(yield_.operands[0]).canonical_name == "tt.dot"
    # so the accumulator after the if comes from the zero constant, the loop's dot and the
    # peeled dot; before, the pointer tt.addptr of line 97 was one of its origins
    result = op_at(module, 126).results[0]
    origins = {module.ops[i].line: module.ops[i].canonical_name for i in ValueFlow(module).origins(result)}
    assert origins == {9: "arith.constant", 112: "tt.dot", 127: "tt.dot"}


@pytest.mark.parametrize("reader", READERS)
def test_an_induction_variable_name_reused_by_the_epilogue_dot(reader):
    # 3.6 gfx942 GEMM: `scf.for %acc_80 = %c0_i32 to ...` (line 108) names its i32 induction
    # variable %acc_80; the epilogue's `%acc_80 = tt.dot ...` (line 145) is yielded on line 146.
    module = parsed(GEMM_3_6, reader)
    yielded = module.values[op_at(module, 146).operands[0]]
    assert yielded.kind == "result" and yielded.line == 145
    assert str(yielded.type) == "tensor<128x128xf32, #mma>"
    loop = op_at(module, 108)
    induction = module.values[loop.regions[0].blocks[0].arguments[0]]
    assert induction.name == yielded.name == "%acc_80" and str(induction.type) == "i32"


@pytest.mark.parametrize("reader", READERS)
def test_each_reduction_combines_its_own_block_arguments(reader):
    # 3.2 sm_90 softmax: `tt.reduce` max (lines 20-23) and sum (lines 28-31) both declare
    # `^bb0(%arg5: f32, %arg6: f32)` and define `%20`; the sum returns its own arith.addf.
    module = parsed(SOFTMAX_3_2, reader)
    add, sum_return = op_at(module, 30), op_at(module, 31)
    assert add.canonical_name == "arith.addf"
    assert [defining_line(module, add, i) for i in (0, 1)] == [29, 29]
    assert all(module.values[v].owner == op_at(module, 28).index for v in add.operands)
    assert module.defining_op(sum_return.operands[0]) is add


# -- the rules, on real-world kernels (fixtures/real_world/) that reuse names in sibling regions --
REAL_WORLD = FIXTURES / "real_world"


@pytest.fixture(scope="module")
def real_world(tmp_path_factory):
    """(target, hash prefix) -> the kernel's directory, unpacked from the corpus archive."""
    root = tmp_path_factory.mktemp("real-world-kernels")
    wanted = {"sm_90": ("3WTPQ2HE",), "gfx942": ("LMNQG3SR", "NR7PIJOV", "Q7CRNCY5", "SQLQHI45")}
    found = {}
    for target, prefixes in wanted.items():
        with tarfile.open(REAL_WORLD / f"{target}.tar.xz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and any(f"/cache/{p}" in m.name for p in prefixes)]
            tar.extractall(root, members=members, filter="data")
        for prefix in prefixes:
            (found[(target, prefix)],) = {root / Path(m.name).parent for m in members if f"/cache/{prefix}" in m.name}
    return found


def findings_of(rule, directory: Path):
    ((report, findings),) = rule_findings(rule, directory).values()
    return report, findings


def text_of(report, stage: str = "ttgir") -> list[str]:
    return Path(report.kernel.artifact(stage).path).read_text().splitlines()


def test_each_loops_convert_feeds_its_own_store(real_world):
    # fla recompute_w_u_fwd (sm_90): two sibling scf.for loops both define
    # `%17 = ttg.convert_layout %16` of the dot result and `tt.store %p, %17, ...` it
    # (lines 109-110 and 167-168). Before, the second store read the first loop's %17:
    # IRS302 said line 109 feeds the stores at 110 and 168, and IRS301 took line 167 for a
    # convert nothing used.
    report, stores = findings_of(ConvertBeforeStore, real_world[("sm_90", "3WTPQ2HE")])
    text = text_of(report)
    assert "%17 = ttg.convert_layout" in text[166] and "tt.store" in text[167] and "%17" in text[167]
    fed = sorted((f.line, re.search(r"feeds tt\.store at (lines? \d+(?:, \d+)*)", f.message).group(1)) for f in stores)
    assert fed == [(109, "line 110"), (167, "line 168")]
    _, trips = findings_of(LdsRoundTrip, real_world[("sm_90", "3WTPQ2HE")])
    assert not {109, 167} & {f.line for f in trips}


TRIP = re.compile(r"layout (#\w+)(?: \([^)]*\))?, is written to LDS as (#\w+) .* at lines? ([\d, ]+) and read back "
                  r".* by ttg\.local_load at lines? ([\d, ]+);")


def test_round_trips_name_the_layouts_of_the_lines_they_cite(real_world):
    # sageattention _attn_fwd (gfx942): two sibling K loops reuse %k_515, %v_540, %v_541, ...
    # Before, `ttg.local_store %v_541, %v_540` of the second loop (line 639, an f16 #linear
    # tile into #shared2) was reported as an i1 64x1 #blocked3 tile written as #blocked3.
    # Its K tile's trips are operand staging and are not reported; the num_warps=8 build of the same
    # kernel (SQLQHI45, sibling regions too) reports P's trip, written at 4 lines in 4 regions.
    cited = 0
    for prefix in ("LMNQG3SR", "SQLQHI45"):
        report, trips = findings_of(LdsRoundTrip, real_world[("gfx942", prefix)])
        text = text_of(report)
        for finding in trips:
            match = TRIP.search(finding.message)
            if match is None:
                continue
            stored, shared, writes, reads = match.groups()
            for line in map(int, writes.split(",")):
                assert re.search(rf"{stored}\b", text[line - 1]) and re.search(rf"{shared}\b", text[line - 1]), line
            for line in map(int, reads.split(",")):
                assert re.search(rf"{shared}\b", text[line - 1]), line
            cited += len(writes.split(","))
        if prefix == "LMNQG3SR":
            assert not any(639 in f.lines for f in trips)
    assert cited >= 4


def test_staged_tiles_of_sibling_ifs_stay_silent(real_world):
    # fla chunk_gated_delta_rule_fwd_kkt_solve (gfx942): two sibling scf.if regions each
    # load a K tile, `%b_k1_478 = ttg.local_alloc` it and `ttg.local_load %b_k1_478` it into
    # a dot operand (lines 392-393, then 461-462): GEMM staging, which IRS301 leaves alone.
    # Before, the second local_load was read as the first buffer's, and its dot was lost.
    directory = real_world[("gfx942", "NR7PIJOV")]
    report, trips = findings_of(LdsRoundTrip, directory)
    text = text_of(report)
    assert "ttg.local_alloc" in text[391] and "ttg.local_alloc" in text[460]
    assert not {392, 393, 461, 462} & {line for f in trips for line in f.lines}
    module = parse_mlir("\n".join(text), "kkt_solve.ttgir")
    facts = LayoutFacts(module, "3.9.0")
    staged = {tuple(module.ops[i].line for i in t.writers + t.readers) for t in facts.round_trips}
    assert {(392, 393), (461, 462)} <= staged
    # each convert of a just-loaded tile is used by the tt.trans right after it, in its own region,
    # on its way to a dot operand: staging too, which IRS301 leaves alone (the real-world ledger's review)
    by_line = {op.line: op for op in module.ops}
    for convert, trans in ((390, 391), (459, 460)):
        users = [op for op in module.ops if by_line[convert].results[0] in op.operands]
        assert [op.line for op in users] == [trans] and users[0].canonical_name == "tt.trans"
    assert not {390, 459} & {f.line for f in trips}


def test_narrow_lds_accesses_in_a_loop_name_the_tile_staged_in_it(real_world):
    # cut-cross-entropy _cce_backward (gfx942), Python line 208 stages two dot operands through
    # LDS: the A tile before the loop (`ttg.local_alloc ... #shared4`, line 389) and the B tile
    # in it (line 416, #shared3; its name `%b_228` is reused from the loop before). The only narrow
    # accesses the ISA makes every iteration are not the B tile's: the ds_read_b32/ds_write_b32 at
    # .amdgcn 5640/5656 carry `tl_utils.py:42 @[ cce_backward.py:54 @[ cce_backward.py:208 ] ]`, the
    # tl_lock_add spin loop broadcasting its global_atomic_cmpswap (IRS103 matches by the inline
    # chain, not the call-site line). What IRS103 reports at 208 is the A tile read outside the loop.
    _, found = findings_of(NarrowLdsAccess, real_world[("gfx942", "Q7CRNCY5")])
    at_208 = [f for f in found if "inlined at cce_backward.py:208" in f.message]
    assert not [f for f in at_208 if {e.name: e.value for e in f.evidence}["in_loop"]]
    (a_tile,) = at_208
    assert "A tile" in a_tile.message and "#shared4" in a_tile.message, a_tile.message
