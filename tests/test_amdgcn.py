"""The AMDGCN parser and its analyses on real Triton output (fixtures/), every version.

Expected values are what a reader finds with grep in the same file: each test reads the
raw line an instruction came from and checks the parser agrees with it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import FIXTURES, artifact_files, backend_entries, kernel_dirs, load_manifest

from irscope.isa import model as isa
from irscope.isa.amdgcn_dataflow import defs_uses, matrix_feeds, waits
from irscope.isa.mix import instruction_mix
from irscope.isa.graph import FunctionGraph
from irscope.parsers.amdgcn import parse_amdgcn, read_metadata
from irscope.parsers.amdgcn_opcodes import parse_wait

MANIFEST = load_manifest()
HIP = backend_entries("hip")
VERSIONS = sorted({e["triton_version"] for e in HIP})
# An instruction line as LLVM prints it: a tab, then a lower-case mnemonic (directives start with '.').
INSTRUCTION_LINE = re.compile(r"^\t[a-z]", re.M)


def amdgcn_files(version: str | None = None) -> list[Path]:
    return artifact_files("hip", "amdgcn", version)


@lru_cache(maxsize=None)
def parsed(path: Path) -> isa.IsaProgram:
    return parse_amdgcn(path.read_text(), str(path))


def one(fixture: str, target: str = "gfx942", version: str = "3.6.0", cache: str | None = None) -> isa.IsaProgram:
    where = dict(fixture=fixture, target_arch=target, triton_version=version)
    if cache:
        where["cache"] = cache
    dirs = kernel_dirs(MANIFEST, **where)
    assert dirs, f"no fixture {where}"
    return parsed(next(dirs[0].glob("*.amdgcn")))


def raw_line(program: isa.IsaProgram, line: int) -> str:
    return Path(program.path).read_text().split("\n")[line - 1]


# ---- every file, every version ------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_every_amdgcn_parses_with_nothing_unparsed(version):
    files = amdgcn_files(version)
    assert files
    for path in files:
        program = parsed(path)
        text = path.read_text()
        assert program.unparsed_in_code == (), (path, program.unparsed_in_code[:3])
        assert len(program.functions) == 1
        fn = program.functions[0]
        # Nothing silently dropped: one Instruction per instruction line of the file.
        assert len(fn.instructions) == len(INSTRUCTION_LINE.findall(text)), path
        assert program.target and program.target.startswith("gfx")
        assert all(text.split("\n")[i.line - 1].strip().startswith(i.opcode) for i in fn.instructions[::50])


@pytest.mark.parametrize("version", VERSIONS)
def test_every_wait_has_its_counters(version):
    for path in amdgcn_files(version):
        for instr in parsed(path).functions[0].instructions:
            if instr.kind == isa.WAIT:
                assert instr.wait is not None and instr.wait.counters, (path, instr.line, instr.text)


def test_versions_cover_the_corpus():
    assert {"3.0.0", "3.2.0", "3.6.0", "3.9.0"} <= set(VERSIONS)


# ---- widths a reader can grep ---------------------------------------------------------

def memory_ops(program, kind):
    return [i for i in program.functions[0].instructions if i.kind == kind and i.memory.space == "global"]


@pytest.mark.parametrize("version", ["3.2.0", "3.6.0", "3.9.0"])
def test_tile_copy_store_width_follows_the_hints(version):
    plain = memory_ops(one("tile_copy_nohint", version=version), isa.GLOBAL_STORE)
    hinted = memory_ops(one("tile_copy_hint", version=version), isa.GLOBAL_STORE)
    assert plain and {i.memory.width_bytes for i in plain} == {2}
    assert {i.opcode for i in plain} <= {"global_store_short", "global_store_short_d16_hi"}
    assert hinted and {i.memory.width_bytes for i in hinted} == {16}
    assert {i.opcode for i in hinted} == {"global_store_dwordx4"}
    for i in plain[:3] + hinted[:3]:
        assert raw_line(one("tile_copy_hint" if i in hinted else "tile_copy_nohint", version=version),
                        i.line).strip().startswith(i.opcode)


@pytest.mark.parametrize("version", ["3.2.0", "3.6.0", "3.9.0"])
def test_gemm_load_width_follows_alignment(version):
    unaligned = memory_ops(one("gemm_unaligned", version=version), isa.GLOBAL_LOAD)
    aligned = memory_ops(one("gemm_aligned", version=version), isa.GLOBAL_LOAD)
    assert {i.opcode for i in unaligned} == {"global_load_ushort"}
    assert {i.memory.width_bytes for i in unaligned} == {2}
    assert {i.opcode for i in aligned} == {"global_load_dwordx4"}
    assert {i.memory.width_bytes for i in aligned} == {16}


def test_lds_pairs_count_two_accesses():
    fn = one("gemm_aligned").functions[0]
    reads = [i for i in fn.instructions if i.opcode == "ds_read2st64_b64"]
    assert reads and all(i.memory.width_bytes == 8 and i.memory.accesses == 2 for i in reads)
    assert all(i.memory.total_bytes == 16 for i in reads)


def test_direct_to_lds_and_transpose_reads_on_gfx950():
    fn = one("gemm_aligned", target="gfx950", version="3.9.0").functions[0]
    copies = [i for i in fn.instructions if i.kind == isa.ASYNC_COPY]
    assert copies and all(i.opcode == "global_load_lds_dwordx4" and i.memory.to_lds for i in copies)
    assert all(i.memory.width_bytes == 16 for i in copies)
    tr = [i for i in fn.instructions if i.opcode == "ds_read_b64_tr_b16"]
    assert tr and all(i.kind == isa.SHARED_LOAD and i.memory.width_bytes == 8 for i in tr)


def test_buffer_ops_are_global_unless_through_the_scratch_descriptor():
    bufferops = one("gemm_bufferops").functions[0]
    loads = [i for i in bufferops.instructions if i.opcode.startswith("buffer_load")]
    assert loads and all(i.kind == isa.GLOBAL_LOAD and i.memory.space == "buffer" for i in loads)
    # gfx90a spills through the private segment buffer descriptor copied from s[0:3];
    # every spill and reload LLVM marked as such is a local (scratch) access, nothing else is.
    spill = one("spill", target="gfx90a")
    text = Path(spill.path).read_text().split("\n")
    for i in spill.functions[0].instructions:
        folded = "Folded Spill" in text[i.line - 1] or "Folded Reload" in text[i.line - 1]
        assert folded == (i.kind in (isa.LOCAL_LOAD, isa.LOCAL_STORE)), (i.line, text[i.line - 1])
    # softmax on gfx90a reuses s[0:3] for a real buffer descriptor: still global.
    softmax = one("softmax", target="gfx90a").functions[0]
    assert [i.kind for i in softmax.instructions if i.opcode.startswith("buffer_")] == \
        [isa.GLOBAL_LOAD, isa.GLOBAL_STORE]


def test_scratch_spills_on_gfx942():
    fn = one("spill").functions[0]
    spills = [i for i in fn.instructions if i.kind == isa.LOCAL_STORE]
    assert spills and all(i.opcode.startswith("scratch_store") and i.memory.space == "scratch" for i in spills)


# ---- MFMA / WMMA ------------------------------------------------------------------------

@pytest.mark.parametrize("fixture,target,version,opcode,shape", [
    ("gemm_mfma16", "gfx942", "3.6.0", "v_mfma_f32_16x16x16_f16", "16x16x16"),
    ("gemm_mfma32", "gfx942", "3.6.0", "v_mfma_f32_32x32x8_f16", "32x32x8"),
    ("gemm_aligned", "gfx942", "3.0.0", "v_mfma_f32_32x32x8_f16", "32x32x8"),
    ("gemm_aligned", "gfx90a", "3.6.0", "v_mfma_f32_32x32x8f16", "32x32x8"),  # gfx90a: legacy name only
    ("gemm_mfma16", "gfx950", "3.6.0", "v_mfma_f32_16x16x32_f16", "16x16x32"),
    ("gemm_aligned", "gfx950", "3.6.0", "v_mfma_f32_32x32x16_f16", "32x32x16"),
])
def test_matrix_shapes(fixture, target, version, opcode, shape):
    ops = [i for i in one(fixture, target, version).functions[0].instructions if i.kind == isa.MATRIX]
    assert ops and {i.opcode for i in ops} == {opcode}
    assert {(i.matrix.family, i.matrix.shape, i.matrix.out_type, i.matrix.in_type) for i in ops} == \
        {("mfma", shape, "f32", "f16")}


def test_every_mfma_in_the_gemm_loop_is_fed_by_lds_reads():
    program = one("gemm_aligned")
    fn = program.functions[0]
    graph = FunctionGraph(fn)
    feeds = matrix_feeds(fn)
    in_loop = [i for i in fn.instructions if i.kind == isa.MATRIX and graph.instruction_depth[i.index]]
    assert in_loop
    for mfma in in_loop:
        by_operand = {f.operand for f in feeds[mfma.index]}
        assert by_operand == {"A", "B"}, mfma.line
        for f in feeds[mfma.index]:
            load = fn.instructions[f.load]
            assert load.kind == isa.SHARED_LOAD
            # The load writes a register the MFMA reads: check on the raw operand text.
            written = set(defs_uses(load)[0])
            read = set(defs_uses(mfma)[1])
            assert f.hops > 1 or written & read


# ---- control flow and loops ----------------------------------------------------------------

@pytest.mark.parametrize("version", [v for v in VERSIONS if v != "3.0.0"])
def test_loop_depth_from_back_edges_matches_llvm_comments(version):
    hinted = 0
    for path in amdgcn_files(version):
        fn = parsed(path).functions[0]
        graph = FunctionGraph(fn)
        for block in fn.blocks:
            if block.loop_hint is not None:
                hinted += 1
                assert graph.block_depth[block.index] == block.loop_hint, (path, block.label, block.line)
    assert hinted


def test_triton_30_has_no_loop_comments_but_loops_are_found():
    fn = one("gemm_aligned", version="3.0.0").functions[0]
    assert all(b.loop_hint is None for b in fn.blocks)
    loops = FunctionGraph(fn).loops
    assert len(loops) == 1 and loops[0].depth == 1
    body = [fn.instructions[i] for b in loops[0].blocks for i in range(fn.blocks[b].start, fn.blocks[b].end)]
    assert any(i.kind == isa.MATRIX for i in body) and any(i.kind == isa.GLOBAL_LOAD for i in body)


def test_straight_line_kernel_has_no_loop():
    fn = one("add").functions[0]
    assert FunctionGraph(fn).loops == ()


# ---- s_waitcnt ------------------------------------------------------------------------------

def test_a_wait_in_the_gemm_loop_names_the_loads_it_waits_for():
    program = one("gemm_aligned")
    fn = program.functions[0]
    graph = FunctionGraph(fn)
    lines = Path(program.path).read_text().split("\n")
    in_loop = [w for w in waits(fn, program.target, graph)
               if graph.instruction_depth[w.wait] and w.counter == "vmcnt" and w.waited]
    assert in_loop
    w = in_loop[0]
    wait = fn.instructions[w.wait]
    assert lines[wait.line - 1].strip() == f"s_waitcnt vmcnt({w.value})" == "s_waitcnt vmcnt(0)"
    # vmcnt(0) waits for every outstanding vector-memory op: here the tile's global loads.
    assert [fn.instructions[o.instruction].opcode for o in w.waited] == ["global_load_dwordx4"] * len(w.waited)
    assert len(w.waited) == w.outstanding == 8
    for op in w.waited:
        load = fn.instructions[op.instruction]
        assert lines[load.line - 1].strip().startswith("global_load_dwordx4")
        if load.index < wait.index and fn.block_of(load.index) is fn.block_of(wait.index):
            between = lines[load.line:wait.line - 1]
            assert op.distance == sum(1 for t in between if INSTRUCTION_LINE.match(t))


def test_partial_lds_waits_leave_the_youngest_reads_outstanding():
    program = one("gemm_aligned")
    fn = program.functions[0]
    graph = FunctionGraph(fn)
    partial = [w for w in waits(fn, program.target, graph)
               if w.counter == "lgkmcnt" and w.value > 0 and graph.instruction_depth[w.wait]]
    assert partial
    for w in partial:
        assert w.outstanding - len(w.waited) <= w.value
        assert all(fn.instructions[o.instruction].kind == isa.SHARED_LOAD for o in w.waited)


def test_gfx12_split_counters_and_gfx11_vscnt():
    waits_1200 = [i for i in one("gemm_aligned", target="gfx1200").functions[0].instructions if i.kind == isa.WAIT]
    names = {n for i in waits_1200 for n, _ in i.wait.counters}
    assert {"loadcnt", "dscnt"} <= names and "vmcnt" not in names
    combined = [i for i in waits_1200 if i.opcode == "s_wait_loadcnt_dscnt"]
    for i in combined:  # loadcnt in bits 13:8, dscnt in 5:0
        imm = int(i.args[-1], 0)
        assert i.wait.counters == (("loadcnt", imm >> 8 & 0x3F), ("dscnt", imm & 0x3F))
    wmma = [i for i in one("gemm_aligned", target="gfx1100").functions[0].instructions if i.kind == isa.MATRIX]
    assert wmma and {i.matrix.family for i in wmma} == {"wmma"}


def test_wait_operand_forms():
    assert parse_wait("s_waitcnt", ("vmcnt(0)", "lgkmcnt(3)"), "gfx942").counters == (("vmcnt", 0), ("lgkmcnt", 3))
    assert parse_wait("s_waitcnt_vscnt", ("null", "0x0"), "gfx1100").counters == (("vscnt", 0),)
    assert parse_wait("s_wait_loadcnt", ("0x3f",), "gfx1200").counters == (("loadcnt", 63),)
    # A raw immediate: gfx9 keeps vmcnt in bits 3:0 and 15:14.
    assert dict(parse_wait("s_waitcnt", ("0xc07f",), "gfx942").counters) == {"vmcnt": 63, "expcnt": 7, "lgkmcnt": 0}


# ---- source lines, directives, metadata ----------------------------------------------------

def test_loc_resolves_to_the_kernel_line_through_the_inline_chain():
    program = one("gemm_aligned")
    fn = program.functions[0]
    lines = Path(program.path).read_text().split("\n")
    inlined = [i for i in fn.instructions if i.source and i.source.inlined]
    assert inlined
    i = inlined[0]
    assert i.source.file.endswith("/gemm.py") and i.source.inlined[0].file.endswith("/standard.py")
    loc = next(t for t in reversed(lines[:i.line - 1]) if t.strip().startswith(".loc"))
    assert f"standard.py:{i.source.inlined[0].line}:" in loc and f"gemm.py:{i.source.line}:" in loc
    # `.loc 1 0 0` means no location.
    assert any(i.source is None for i in fn.instructions)


def test_triton_30_locations_have_no_inline_chain():
    fn = one("gemm_aligned", version="3.0.0").functions[0]
    files = {i.source.file.rsplit("/", 1)[-1] for i in fn.instructions if i.source}
    assert {"gemm.py", "standard.py"} <= files
    assert not any(i.source.inlined for i in fn.instructions if i.source)


def test_descriptor_kernel_info_and_metadata_agree():
    program = one("gemm_aligned")
    facts = program.facts
    meta = read_metadata(program)["amdhsa.kernels"][0]
    assert meta[".name"] == "matmul_kernel"
    assert facts["info.TotalNumVgprs"].value == meta[".vgpr_count"] == facts[".amdhsa_next_free_vgpr"].value
    origin = facts[".amdhsa_next_free_vgpr"].origin
    assert raw_line(program, origin.line).strip().startswith(".amdhsa_next_free_vgpr")
    assert raw_line(program, facts["info.NumVgprs"].origin.line).strip().startswith("; NumVgprs:")


def test_triton_30_has_metadata_but_no_kernel_info():
    program = one("gemm_aligned", version="3.0.0")
    assert not any(k.startswith("info.") for k in program.facts)
    entry = next(e for e in HIP if e["triton_version"] == "3.0.0" and e["fixture"] == "gemm_aligned")
    assert read_metadata(program)["amdhsa.kernels"][0][".vgpr_count"] == entry["amdgcn"]["vgpr_count"]


# ---- instruction mix -----------------------------------------------------------------------

def test_instruction_mix_splits_loops_and_python_lines():
    program = one("gemm_aligned")
    mix = instruction_mix(program)
    assert mix.total == len(program.functions[0].instructions) == sum(r.count for r in mix.rows)
    assert mix.count(isa.MATRIX, in_loop=True) > 0 and mix.count(isa.MATRIX, in_loop=False) > 0
    assert mix.details(isa.GLOBAL_LOAD) == {"global:16B": mix.count(isa.GLOBAL_LOAD)}
    # Every counted line really holds an instruction of that kind.
    lines = Path(program.path).read_text().split("\n")
    row = next(r for r in mix.rows if r.kind == isa.GLOBAL_STORE)
    assert all(lines[n - 1].strip().startswith("global_store") for n in row.lines)
    # The tl.store line of the kernel is where the stores come from.
    store_lines = [p for p in mix.python_lines if dict(p.counts).get(isa.GLOBAL_STORE)]
    assert store_lines and all(p.file.endswith("gemm.py") for p in store_lines)
    source = Path(FIXTURES / "kernels" / "gemm.py").read_text().split("\n")
    assert all("tl.store" in source[p.line - 1] for p in store_lines)
