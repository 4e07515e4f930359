"""Layout facts on real TTGIR: round trips through LDS, convert_layout lowering, Python lines.

Each expectation below was read off the fixture's TTGIR by hand first (quoted in the
test); convert_layout lowerings are cross-checked against the same kernel's LLVM IR.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import pytest
from conftest import FIXTURES, load_manifest

from irscope.ir.layouts.graph import GLOBAL, LayoutFacts
from irscope.parsers.llir import debug_info
from irscope.parsers.mlir_parser import parse_mlir
from irscope.ir.source_map import python_lines

ENTRIES = [e for e in load_manifest()["kernels"] if e["cache"].startswith("caches/")]


def _path(version: str, target: str, fixture: str):
    (entry,) = [e for e in ENTRIES if e["cache"] == f"caches/triton-{version}" and e["target_name"] == target
                and e["fixture"] == fixture]
    return FIXTURES / entry["cache"] / entry["dir"] / entry["name"], entry


@lru_cache(maxsize=None)
def facts(version: str, target: str, fixture: str) -> LayoutFacts:
    base, entry = _path(version, target, fixture)
    path = base.with_suffix(".ttgir")
    return LayoutFacts(parse_mlir(path.read_text(), str(path)), entry["triton_version"])


def trips(f: LayoutFacts) -> list[tuple]:
    return [(t.stored_layout, t.shared_layout, t.loaded_layout, t.python_lines, t.loop_depth) for t in f.round_trips]


DOT_A = "#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>"
DOT_B = "#ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 4}>"


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_transpose_kernel_reads_bt_back_in_a_linear_layout(version):
    # trans_dot gfx942 TTGIR: `ttg.local_store %bt, %bt_33 : tensor<128x64xf16, #blocked> ->
    # !ttg.memdesc<128x64xf16, #shared1, ...>` with #shared1 = swizzled_shared<{vec = 1, maxPhase = 1}>,
    # then `%acc_62 = ttg.local_load %bt_57 : ... -> tensor<128x64xf16, #linear>` and
    # `tt.trans %acc_62 ... -> tensor<64x128xf16, #ttg.dot_op<{opIdx = 1, ...}>>` in registers.
    f = facts(version, "gfx942", "trans_dot")
    assert trips(f) == [
        ("#blocked", "#shared", DOT_A, (27,), 1),  # a = tl.load(a_ptrs): staged for the dot
        ("#blocked", "#shared1", "#linear", (28, 29), 1),  # bt: stored, read back as #linear for tl.trans
    ]
    bt = f.round_trips[1]
    assert bt.layout_change and not bt.feeds_dot and bt.from_global_load
    shared1 = f.module.aliases["#shared1"]
    assert (shared1.vec, shared1.max_phase) == (1, 1)
    graph = f.graph()
    assert graph.has_edge("#linear", DOT_B)  # tt.trans, in registers
    (edge,) = graph.get_edge_data("#linear", DOT_B).values()
    assert edge["op"] == "tt.trans" and edge["in_loop"] and edge["python_lines"] == (29,)


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx90a"])
def test_flash_attention_stages_q_k_and_v_through_lds_on_amd(target):
    # attn_fwd 3.6: q (line 24) once before the loop, kt (31) and v (38) in the loop, each
    # `ttg.local_alloc`/`local_store` then `ttg.local_load` into a dot-operand layout.
    f = facts("3.6", target, "flash_attn")
    got = [(t.python_lines, t.loop_depth, t.feeds_dot) for t in f.round_trips]
    assert got == [((24,), 0, True), ((31,), 1, True), ((38,), 1, True)]
    q, k, v = f.round_trips
    assert q.from_global_load and k.from_global_load
    # v's register layout: a plain load (#blocked) on gfx950/gfx90a; on gfx942 it first goes
    # through `amdg.in_thread_transpose` into #linear, so the value stored is not the load's.
    assert v.from_global_load == (v.stored_layout != "#linear")
    assert (target == "gfx942") == (v.stored_layout == "#linear")


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_flash_attention_on_hopper_has_no_register_round_trip(version):
    # sm_90: K and V go global -> shared with async copies / TMA, never through registers first.
    f = facts(version, "sm_90", "flash_attn")
    assert f.round_trips == []
    assert any(m.source == GLOBAL and m.kind in ("ttg.async_copy_global_to_local",
                                                   "ttng.async_tma_copy_global_to_local") for m in f.moves)
    # `%0 = ttg.convert_layout %acc : tensor<128x64xf32, #mma> -> tensor<128x64xf32, #blocked1>` before tt.store
    (epilogue,) = f.epilogue_converts
    assert (epilogue.source, epilogue.target, epilogue.python_line) == ("#mma", "#blocked1", 43)
    assert epilogue.lowering == "shared_memory"


def test_int4_dequant_writes_computed_values_to_lds():
    # int4 gfx942 3.6: the dequantized B tile (`(b.to(tl.float16) - 8.0) * scale`, line 40) is #linear
    # in registers, stored to #shared1 and read back as the dot's B operand: the ROCm guide's pattern.
    f = facts("3.6", "gfx942", "int4_gemm")
    computed = [t for t in f.round_trips if not t.from_global_load]
    assert computed and all(t.stored_layout == "#linear" and t.loaded_layout == DOT_B for t in computed)
    assert {t.python_lines for t in computed} == {(40,)}
    staged = [t for t in f.round_trips if t.from_global_load]
    assert [(t.stored_layout, t.loaded_layout, t.python_lines) for t in staged] == [("#blocked", DOT_A, (33,))]


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["fixture"] == "add"],
                         ids=lambda e: f"{e['cache']}-{e['target_name']}")
def test_vector_add_moves_nothing_through_lds(entry):
    path = FIXTURES / entry["cache"] / entry["dir"] / f"{entry['name']}.ttgir"
    f = LayoutFacts(parse_mlir(path.read_text(), str(path)), entry["triton_version"])
    assert f.round_trips == [] and f.conversions == [] and f.epilogue_converts == []
    kinds = Counter(m.kind for m in f.moves)
    assert kinds == {"tt.load": 2, "tt.store": 1} or kinds == {"amdg.buffer_load": 2, "amdg.buffer_store": 1}


def _conversion_cases():
    for e in ENTRIES:
        base = FIXTURES / e["cache"] / e["dir"] / e["name"]
        text = base.with_suffix(".ttgir").read_text()
        if "convert_layout" in text:
            yield pytest.param(e, id=f"{e['cache'].split('/')[-1]}-{e['target_name']}-{e['fixture']}-{e['dir'][:6]}")


# The LLVM IR's LDS accesses and cross-lane shuffles, read with plain patterns: addrspace(3) loads and
# stores (AMD, and NVIDIA's non-asm ones), PTX `ld.shared` / `st.shared` / ldmatrix / stmatrix in inline
# asm, AMD's transposing LDS reads; DPP, ds.swizzle, ds.(b)permute, readlane, permlane and shfl.
_LDS_STORE = re.compile(r"\bstore\b.*ptr addrspace\(3\)|\bst\.shared|stmatrix")
_LDS_LOAD = re.compile(r"= load\b.*ptr addrspace\(3\)|\bld\.shared|ldmatrix|amdgcn\.ds\.read\.tr")
_SHUFFLE = re.compile(r"amdgcn\.(?:update\.dpp|mov\.dpp|ds\.swizzle|ds\.b?permute|readlane|readfirstlane|writelane"
                      r"|permlane)|nvvm\.shfl|\bshfl\.")
_DBG = re.compile(r"!dbg !(\d+)")


def _llvm_lds_and_shuffles(text: str) -> tuple[Counter, Counter]:
    """(("store" | "load", Python line) -> count, Python line -> shuffles) of the kernel's LLVM IR."""
    debug = debug_info(text)
    lds: Counter = Counter()
    shuffles: Counter = Counter()
    for line in text.split("\n"):
        ref = _DBG.search(line)
        where = debug.location(int(ref.group(1))) if ref and line.startswith("  ") else None
        if where is None:
            continue
        lds["store", where.line] += bool(_LDS_STORE.search(line))
        lds["load", where.line] += bool(_LDS_LOAD.search(line))
        shuffles[where.line] += bool(_SHUFFLE.search(line))
    return lds, shuffles


@pytest.mark.parametrize("entry", list(_conversion_cases()))
def test_convert_lowering_agrees_with_the_llvm_ir(entry):
    """A convert said to use shared memory has LDS stores and loads at its Python line in the
    LLVM IR; one said to use warp shuffles has shuffles there; registers/noop have no LDS traffic
    unless another LDS op of the TTGIR maps to that line too."""
    base = FIXTURES / entry["cache"] / entry["dir"] / entry["name"]
    f = LayoutFacts(parse_mlir(base.with_suffix(".ttgir").read_text(), "k.ttgir"), entry["triton_version"])
    lds, shuffles = _llvm_lds_and_shuffles(base.with_suffix(".llir").read_text())
    other_lds_lines = {m.python_line for m in f.moves if m.kind.startswith(("ttg.local_", "ttg.async_copy"))}
    for c in f.conversions:
        assert c.python_line is not None
        if c.lowering == "shared_memory":
            assert lds[("store", c.python_line)] and lds[("load", c.python_line)], c
        elif c.lowering == "warp_shuffle":
            assert shuffles[c.python_line], c
        elif c.lowering in ("noop", "registers") and c.python_line not in other_lds_lines:
            assert not lds[("store", c.python_line)], c
        assert c.lowering != "unknown" or c.reason


def test_python_lines_list_the_kernel_lines_with_their_ops():
    f = facts("3.6", "gfx942", "trans_dot")
    lines = python_lines(f.module)
    assert [pl.line for pl in lines] == sorted(pl.line for pl in lines)
    by_line = {pl.line: pl for pl in lines}
    kernel = (FIXTURES / "kernels" / "trans_dot.py").read_text().splitlines()
    # line 29 is `acc = tl.dot(a, tl.trans(bt), acc)`: the dot, the trans and the B operand read
    assert "tl.dot(a, tl.trans(bt), acc)" in kernel[28]
    assert {"tt.dot", "tt.trans", "ttg.local_load"} <= set(by_line[29].op_names)
    assert "tt.load" in by_line[28].op_names and "tl.load(bt_ptrs)" in kernel[27]
    # `acc = tl.zeros(...)` (line 25) is inlined from triton/language/standard.py
    assert any(fr.file.endswith("triton/language/standard.py") for fr in by_line[25].library_frames)
    every_op = [i for pl in lines for i in pl.ops]
    assert len(every_op) == len(set(every_op))  # an op belongs to one line
    for pl in lines:
        for i in pl.ops:
            assert f.module.ops[i].location.outermost.line == pl.line or pl.line in \
                {fr.line for fr in f.module.ops[i].location.frames}


def test_python_lines_of_a_harvested_kernel_read_its_ttgir():
    import irscope

    base, entry = _path("3.6", "gfx942", "trans_dot")
    (kernel,) = irscope.harvest([base.parent]).kernels
    from_kernel = python_lines(kernel)
    from_module = python_lines(facts("3.6", "gfx942", "trans_dot").module)
    assert [(p.line, p.op_names) for p in from_kernel] == [(p.line, p.op_names) for p in from_module]
    assert from_kernel[0].file == "/tmp/irscope-fixtures/kernels/trans_dot.py"
