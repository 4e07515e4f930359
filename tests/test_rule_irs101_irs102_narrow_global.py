"""IRS101 narrow-global-load and IRS102 narrow-global-store on the real fixtures.

The counts are checked against the artifact text itself: every line a finding names holds
the narrow opcode, and the findings of a kernel cover every narrow access of that kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.pipeline.analyze import scan
from irscope.engine.selection import RuleSelection
from irscope.rules.irs101_narrow_global_load import NarrowGlobalLoad
from irscope.rules.irs102_narrow_global_store import NarrowGlobalStore

VERSIONS = ("3.2", "3.6", "3.9")
PREDICATE = r"(?:@!?%\w+\s+)?"  # PTX guards: `@%p2 ld.global.b16`
NARROW_LOAD = re.compile(r"^\s*" + PREDICATE + r"(global_load_(?:ushort|short_d16\w*|ubyte|sbyte|sshort|dword|dwordx2)|"
                         r"ld\.global(?:\.nc)?\.b16)\b")
NARROW_STORE = re.compile(r"^\s*" + PREDICATE + r"(global_store_(?:short_d16_hi|short|byte|dword|dwordx2)|"
                          r"st\.global\.b16)\b")


@pytest.fixture(scope="module")
def reports():
    manifest = load_manifest()
    report = scan([FIXTURES / "caches" / f"triton-{v}" for v in (*VERSIONS, "3.0")],
                  rules=RuleSelection.only(NarrowGlobalLoad, NarrowGlobalStore))
    fixture_of = {e["dir"]: e["fixture"] for e in manifest["kernels"]}
    return [(fixture_of.get(Path(r.kernel.directory).name), r) for r in report.kernels]


def pick(reports, fixture, arch, version):
    return [r for f, r in reports if f == fixture and r.kernel.target.arch == arch
            and r.kernel.triton_version.value.startswith(version)]


def artifact_lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines()


@pytest.mark.parametrize("version", ("3.6", "3.9"))
@pytest.mark.parametrize("arch,isa", [("gfx942", "amdgcn"), ("sm_90", "ptx")])
def test_unaligned_gemm_loads_fire_on_both_operand_lines(reports, version, arch, isa):
    (kr,) = pick(reports, "gemm_unaligned", arch, version)
    loads = [f for f in kr.findings if f.code == "IRS101"]
    assert sorted(f.python_line for f in loads) == [48, 49]  # a = tl.load(...), b = tl.load(...)
    text = artifact_lines(loads[0].path)
    narrow = [n for n, line in enumerate(text, 1) if NARROW_LOAD.match(line)]
    assert sorted(n for f in loads for n in f.lines) == narrow  # every narrow load, each once
    for f in loads:
        assert f.stage == isa and f.severity == "warning"
        assert f.number("width_bytes") == 2 and f.number("count") == len(f.lines)
        assert f.number("in_loop") > 0 and f.python_file.endswith("gemm.py")
        op = NARROW_LOAD.match(text[f.line - 1]).group(1)
        assert f"of 2 B per lane ({op};" in f.message


@pytest.mark.parametrize("version", VERSIONS)
def test_tile_copy_without_hints_fires_and_with_hints_does_not(reports, version):
    """The GEMM tuning thread's case: global_store_short -> global_store_dwordx4 with hints."""
    for arch in ("gfx942", "sm_90"):
        for kr in pick(reports, "tile_copy_nohint", arch, version):
            (store,) = [f for f in kr.findings if f.code == "IRS102"]
            text = artifact_lines(store.path)
            assert all(NARROW_STORE.match(text[n - 1]) for n in store.lines)
            assert store.python_line == 34 and store.number("width_bytes") == 2
            assert "could not prove any of them contiguous and aligned" in store.message
        for kr in pick(reports, "tile_copy_hint", arch, version):
            assert kr.findings == ()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fixture", ["add", "softmax", "gemm_aligned", "layernorm", "flash_attn"])
def test_vectorized_kernels_are_silent(reports, fixture, version):
    for kr in pick(reports, fixture, "gfx942", version) + pick(reports, fixture, "sm_90", version):
        assert kr.findings == (), (kr.kernel.key, [str(f) for f in kr.findings])


def test_a_non_transposed_mfma_store_is_narrow_where_later_tritons_store_wider(reports):
    """Triton 3.0's aligned GEMM stores its non-transposed MFMA accumulator (4 consecutive rows a lane, 1 column)
    with 64 global_store_short; Triton 3.2+ transposes the layout and stores the same tile with dwordx2."""
    (kr,) = pick(reports, "gemm_aligned", "gfx942", "3.0")
    (store,) = kr.findings
    text = artifact_lines(store.path)
    assert store.code == "IRS102" and store.number("count") == 64
    assert all(re.match(r"\s*global_store_short\b", text[n - 1]) for n in store.lines)
    assert "4 consecutive elements along dimension 0" in store.message and "upgrading" in store.fix
    for version in ("3.2", "3.6", "3.9"):
        (later,) = pick(reports, "gemm_aligned", "gfx942", version)
        assert "global_store_dwordx2" in Path(later.kernel.artifact("amdgcn").path).read_text()
        assert later.findings == ()


# ---- every global-memory op family, on kernels compiled here by Triton 3.9 (tests/data/kernels/memory_ops.py) ----

KERNELS = Path(__file__).parent / "data" / "kernels"
COMPILE = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
import memory_ops

GEMM = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
        "stride_cn"]


def build(case, fn, types, unit=(), div=(), prange=(), target=("hip", "gfx942"), env=None, **options):
    os.environ["TRITON_CACHE_DIR"] = os.path.join(sys.argv[2], case)
    os.environ.pop("TRITON_HIP_USE_ASYNC_COPY", None)
    os.environ.update(env or {})
    names = fn.arg_names
    const = {n: 1 for n in unit}
    const.update({n: v for n, v in options.pop("constexprs").items()})
    signature = {n: ("constexpr" if n in const else types.get(n, "i32")) for n in names}
    attrs = {(i,): [p for p, on in (("tt.divisibility", n in div), ("tt.pointer_range", n in prange)) if on]
             for i, n in enumerate(names) if n in div or n in prange}
    attrs = {k: [[p, 16 if p == "tt.divisibility" else 32] for p in v] for k, v in attrs.items()}
    backend, arch = target
    triton.compile(ASTSource(fn, signature, const, attrs),
                   target=GPUTarget(backend, arch, 64 if backend == "hip" else 32), options=options)


tiles = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
f32 = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
pointers = ["a_ptr", "b_ptr", "c_ptr"]
# fp32 operands with runtime strides of unknown divisibility: pipelined into LDS 4 bytes at a time
build("sm90_cp_async", memory_ops.gemm, f32, div=pointers, target=("cuda", 90), num_warps=4, num_stages=3,
      constexprs=tiles)
build("gfx950_lds_copy", memory_ops.gemm, f32, div=pointers, prange=pointers, target=("hip", "gfx950"),
      num_warps=4, num_stages=2, constexprs=tiles)
build("gfx942_lds_copy", memory_ops.gemm, f32, div=pointers, prange=pointers, env={"TRITON_HIP_USE_ASYNC_COPY": "1"},
      num_warps=4, num_stages=2, constexprs=tiles)
# fp16 GEMM, bf16 C stored column-major (stride_cm = 1): straight from the MFMA layout
f16 = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*bf16"}
aligned = dict(unit=("stride_ak", "stride_bn", "stride_cm"), prange=pointers,
               div=pointers + ["M", "N", "K", "stride_am", "stride_bk", "stride_cn"])
build("gfx942_c_column_major", memory_ops.gemm, f16, num_warps=4, num_stages=2, constexprs=tiles, **aligned)
build("gfx942_c_transposed", memory_ops.gemm_c_transposed, f16, num_warps=4, num_stages=2, constexprs=tiles,
      **aligned)
build("gfx942_atomic", memory_ops.atomic_add_loaded, {"x_ptr": "*fp16", "out_ptr": "*fp16"}, div=["x_ptr", "n"],
      num_warps=4, constexprs={"BLOCK": 1024})
# loop-carried offsets that stop being contiguous after the first step (offs = offs * 3)
build("gfx942_strided_walk", memory_ops.strided_walk, {"x_ptr": "*fp32", "out_ptr": "*fp32"},
      div=["x_ptr", "out_ptr"], num_warps=4, constexprs={"BLOCK": 1024})
'''


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{case: KernelReport} of the kernels above, compiled by Triton 3.9 in a child process (so this
    process imports no triton) and scanned with the two rules."""
    triton = pytest.importorskip("triton")
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 9):
        pytest.skip("the op spellings and knobs below are Triton 3.9's")
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("memory-ops")
    env = dict(__import__("os").environ, TRITON_HOME=str(root / "home"), TRITON_DEFAULT_FP_FUSION="1")
    subprocess.run([sys.executable, "-c", COMPILE, str(KERNELS), str(root)], env=env, check=True,
                   capture_output=True, text=True)
    out = {}
    for case in sorted(p.name for p in root.iterdir() if p.name != "home"):
        (kr,) = scan(root / case, rules=RuleSelection.only(NarrowGlobalLoad, NarrowGlobalStore)).kernels
        out[case] = kr
    return out


def source_line(marker: str) -> int:
    text = (KERNELS / "memory_ops.py").read_text().splitlines()
    return next(n for n, line in enumerate(text, 1) if line.rstrip().endswith(marker))


def ttgir_ops(kr) -> str:
    return Path(kr.kernel.artifact("ttgir").path).read_text()


def isa_at(kr, stage: str, python_line: int, pattern: str) -> list[int]:
    """Artifact lines of the instructions matching `pattern` that the line table puts at `python_line`."""
    text = Path(kr.kernel.artifact(stage).path).read_text().splitlines()
    loc = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s")
    at, hits = None, []
    for n, line in enumerate(text, 1):
        if (m := loc.match(line)):
            at = int(m.group(1))
        elif at == python_line and re.search(pattern, line):
            hits.append(n)
    return hits


def test_narrow_cp_async_of_a_pipelined_operand_is_a_narrow_load(compiled):
    """sm_90: ttg.async_copy_global_to_local of fp32 tiles with runtime strides -> cp.async.ca ... 0x4."""
    kr = compiled["sm90_cp_async"]
    assert "ttg.async_copy_global_to_local" in ttgir_ops(kr) and " tt.load " not in ttgir_ops(kr)
    loads = sorted((f for f in kr.findings if f.code == "IRS101"), key=lambda f: f.python_line)
    assert [f.python_line for f in loads] == [source_line("# A_LOAD"), source_line("# B_LOAD")]
    text = artifact_lines(loads[0].path)
    for f in loads:
        assert f.stage == "ptx" and f.severity == "warning" and f.number("width_bytes") == 4
        assert all(re.search(r"cp\.async\.ca\.shared\.global.*, 0x4,", text[n - 1]) for n in f.lines)
        assert f.lines == tuple(isa_at(kr, "ptx", f.python_line, r"cp\.async\.ca\.shared\.global"))
        assert "copies into shared memory of 4 B per lane (cp.async.ca.shared.global;" in f.message
        assert "1-element runs" in f.message and f.number("in_loop") > 0


def test_narrow_buffer_load_to_local_is_a_narrow_load_where_the_hardware_copies_wider(compiled):
    """amdg.buffer_load_to_local -> buffer_load_dword ... lds: narrow on gfx950 (dwordx4 exists there),
    as wide as the hardware allows on gfx942 (a dword a lane)."""
    wide, capped = compiled["gfx950_lds_copy"], compiled["gfx942_lds_copy"]
    for kr in (wide, capped):
        assert "amdg.buffer_load_to_local" in ttgir_ops(kr)
        assert isa_at(kr, "amdgcn", source_line("# A_LOAD"), r"buffer_load_dword\s.*\slds\b")
    loads = sorted((f for f in wide.findings if f.code == "IRS101"), key=lambda f: f.python_line)
    assert [f.python_line for f in loads] == [source_line("# A_LOAD"), source_line("# B_LOAD")]
    for f in loads:
        assert "copies into LDS of 4 B per lane (buffer_load_dword ... lds;" in f.message
        assert f.lines == tuple(isa_at(wide, "amdgcn", f.python_line, r"buffer_load_dword\s.*\slds\b"))
    assert [f for f in capped.findings if f.code == "IRS101"] == []


def test_tma_copies_are_read_and_never_narrow(reports):
    """sm_90 tensor descriptors: ttng.async_tma_copy_* and cp.async.bulk.tensor, no per-lane width."""
    from irscope.ir.layouts.access_width import ir_accesses
    from irscope.parsers.mlir_parser import parse_mlir

    (kr,) = pick(reports, "tma_gemm", "sm_90", "3.9")
    path = kr.kernel.artifact("ttgir").path
    tma = [a for a in ir_accesses(parse_mlir(Path(path).read_text(), path)) if a.direction == "tma"]
    assert {a.op for a in tma} >= {"ttng.async_tma_copy_global_to_local"} and all(a.python_line for a in tma)
    assert "cp.async.bulk.tensor" in Path(kr.kernel.artifact("ptx").path).read_text()
    assert [f for f in kr.findings if f.code in ("IRS101", "IRS102")] == []


def test_an_atomics_compare_and_swap_loads_are_not_a_loads_on_the_same_line(compiled):
    """gfx942: tl.atomic_add(out + offs, tl.load(x + offs)) in fp16 with out unaligned: the atomic's CAS loop
    issues global_load_dword at the line, the tl.load's own buffer load is as wide as its layout."""
    kr = compiled["gfx942_atomic"]
    line = source_line("# ATOMIC")
    assert "tt.atomic_rmw" in ttgir_ops(kr)
    assert isa_at(kr, "amdgcn", line, r"global_atomic_cmpswap") and isa_at(kr, "amdgcn", line, r"global_load_dword\s")
    assert [f for f in kr.findings if f.code == "IRS101"] == []


def test_a_c_tile_stored_across_the_mfma_runs_is_narrow_and_the_transposed_tile_is_not(compiled):
    """Issue 21 defect 12: C column-major, stored straight from the transposed MFMA layout (4 consecutive
    elements along N a lane) -> 64 buffer_store_short; computing C^T with the dot's operands swapped puts the
    runs along M -> buffer_store_dwordx2, nothing reported."""
    narrow, wide = compiled["gfx942_c_column_major"], compiled["gfx942_c_transposed"]
    (store,) = [f for f in narrow.findings if f.code == "IRS102"]
    text = artifact_lines(store.path)
    assert store.number("count") == 64 == len(store.lines)
    assert all(re.match(r"\s*buffer_store_short\b", text[n - 1]) for n in store.lines)
    assert "straight from the MFMA accumulator layout, which gives each lane 4 consecutive elements along " \
           "dimension 1 (memory stride a runtime value) but 1 at a time along dimension 0" in store.message
    assert "tl.dot(tl.trans(b), tl.trans(a))" in store.fix and "pointer facts" not in store.fix
    assert "buffer_store_dwordx2" in Path(wide.kernel.artifact("amdgcn").path).read_text()
    assert wide.findings == ()


@pytest.mark.parametrize("version,arch,isa,copy", [
    ("3.0", "sm_90", "ptx", r"cp\.async\.cg\.shared\.global.*, 0x10,"),
    ("3.2", "sm_90", "ptx", r"cp\.async\.cg\.shared\.global.*, 0x10,"),
    ("3.6", "sm_90", "ptx", r"cp\.async\.cg\.shared\.global.*, 0x10,"),
    ("3.9", "sm_90", "ptx", r"cp\.async\.cg\.shared\.global.*, 0x10,"),
    ("3.9", "gfx950", "amdgcn", r"global_load_lds_dwordx4\b"),
])
def test_async_copies_of_every_version_are_read_and_16_byte_ones_are_left_alone(reports, version, arch, isa, copy):
    """`triton_gpu.async_copy_global_to_local` (3.0-3.2) and `ttg.` (3.3+): each op is read, with the
    16 bytes a thread holds contiguously, and the ISA's copies are that wide."""
    from irscope.ir.layouts.access_width import ir_accesses
    from irscope.parsers.mlir_parser import parse_mlir

    (kr,) = pick(reports, "gemm_aligned", arch, version)
    path = kr.kernel.artifact("ttgir").path
    text = Path(path).read_text()
    copies = [a for a in ir_accesses(parse_mlir(text, path)) if a.family == "copy"]
    assert len(copies) == text.count("async_copy_global_to_local %") > 0
    assert {a.layout_bytes for a in copies} == {16} and all(a.python_line for a in copies)
    assert re.search(copy, Path(kr.kernel.artifact(isa).path).read_text())
    assert kr.findings == ()


def test_loop_carried_offsets_that_the_loop_scales_are_not_contiguous(compiled):
    """gfx942: `offs = offs * 3` at the end of each step. The init (tl.arange) is contiguous, the yield is
    3 elements apart; Triton's AxisInfo joins the two, finds no contiguity and loads a dword at a time although
    the layout gives each thread 4 elements. That is the data's shape: no pointer fact widens it, so no finding
    (the iter_arg is not taken for its initial value alone)."""
    from irscope.ir.pointer_strides import DATA, PointerStrides, address_strides
    from irscope.parsers.mlir_parser import parse_mlir

    kr = compiled["gfx942_strided_walk"]
    text = ttgir_ops(kr)
    assert "sizePerThread = [4]" in text and re.search(r"arith\.muli %offs_\w+, %\w+ : tensor<1024xi32", text)
    walk = source_line("# WALK")
    assert isa_at(kr, "amdgcn", walk, r"global_load_dword\s")
    assert [f for f in kr.findings if f.code == "IRS101"] == []
    module = parse_mlir(text, kr.kernel.artifact("ttgir").path)
    (load,) = module.ops_named("tt.load")
    assert address_strides(PointerStrides(module), load) == (DATA,)
