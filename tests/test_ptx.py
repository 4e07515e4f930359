"""The PTX parser on real Triton output (fixtures/), every version.

Expected values are what a reader finds with grep in the same file: each test reads the
raw line an instruction came from and checks the parser agrees with it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import FIXTURES, artifact_files, backend_entries, load_manifest

from irscope.isa import model as isa
from irscope.model.errors import ArtifactError, decode_text
from irscope.parsers.ptx import parse_ptx, ptx_operand, ptx_registers

MANIFEST = load_manifest()
CUDA = backend_entries("cuda")
VERSIONS = sorted({e["triton_version"] for e in CUDA})
MALFORMED = Path(__file__).parent / "malformed"
# An instruction line: optional predicate, a lower-case opcode, operands, `;` (labels end in `:`,
# directives start with `.`, comments with `//`).
INSTRUCTION_LINE = re.compile(r"^[ \t]*(?:@!?[%\w]+[ \t]+)?[a-z][\w.:]*(?:[ \t][^;\n]*)?;", re.M)


def ptx_files(version: str | None = None) -> list[Path]:
    return artifact_files("cuda", "ptx", version)


@lru_cache(maxsize=None)
def parsed(path: Path) -> isa.IsaProgram:
    return parse_ptx(path.read_text(), str(path))


def entries(fixture: str, target: str = "sm_90", version: str | None = None) -> list[dict]:
    found = [e for e in CUDA if e["fixture"] == fixture and e["target_name"] == target
             and (version is None or e["triton_version"] == version)]
    assert found, f"no fixture {fixture} {target} {version}"
    return found


def program_of(entry: dict) -> isa.IsaProgram:
    return parsed(FIXTURES / entry["cache"] / entry["dir"] / f"{entry['name']}.ptx")


@lru_cache(maxsize=None)
def file_lines(path: str) -> list[str]:
    return Path(path).read_text().split("\n")


def raw_line(program: isa.IsaProgram, line: int) -> str:
    return file_lines(program.path)[line - 1]


def instructions(program: isa.IsaProgram, kind: str) -> list[isa.Instruction]:
    return [i for i in program.functions[0].instructions if i.kind == kind]


# ---- every file, every version ------------------------------------------------------

def test_versions_cover_the_corpus():
    assert {"3.0.0", "3.2.0", "3.6.0", "3.9.0"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_ptx_parses_with_nothing_unparsed(version):
    files = ptx_files(version)
    assert files
    for path in files:
        program = parsed(path)
        text = path.read_text()
        assert program.unparsed_in_code == (), (path, program.unparsed_in_code[:3])
        assert program.isa == "ptx" and program.target and program.target.startswith("sm_")
        assert len(program.functions) == 1
        fn = program.functions[0]
        # Nothing dropped: one Instruction per instruction line of the file.
        assert len(fn.instructions) == len(INSTRUCTION_LINE.findall(text)), path
        lines = text.split("\n")
        for i in fn.instructions:
            raw = lines[i.line - 1].strip()
            assert raw.startswith(f"@{i.predicate}" if i.predicate else i.opcode), (path, i.line)
        # Blocks tile the instruction stream and every successor exists.
        assert fn.blocks[0].start == 0 and fn.blocks[-1].end == len(fn.instructions)
        assert all(a.end == b.start for a, b in zip(fn.blocks, fn.blocks[1:]))
        assert all(0 <= s < len(fn.blocks) for b in fn.blocks for s in b.successors)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_wait_and_matrix_op_is_complete(version):
    for path in ptx_files(version):
        for i in parsed(path).functions[0].instructions:
            if i.kind == isa.WAIT:
                assert i.wait is not None and i.wait.counters, (path, i.line)
            if i.kind == isa.MATRIX:
                assert i.matrix is not None and None not in (i.matrix.m, i.matrix.n, i.matrix.k), (path, i.line)
            if i.kind in isa.MEMORY_KINDS:
                assert i.memory is not None, (path, i.line)


# ---- widths a reader can grep ---------------------------------------------------------

@pytest.mark.parametrize("fixture,kind,opcode,width", [
    ("tile_copy_nohint", isa.GLOBAL_STORE, "st.global.b16", 2),
    ("tile_copy_hint", isa.GLOBAL_STORE, "st.global.v4.b32", 16),
    ("gemm_unaligned", isa.GLOBAL_LOAD, "ld.global.b16", 2),
    ("gemm_aligned", isa.ASYNC_COPY, "cp.async.cg.shared.global", 16),
])
def test_global_access_widths(fixture, kind, opcode, width):
    for entry in entries(fixture):
        program = program_of(entry)
        ops = [i for i in instructions(program, kind) if i.memory.space == "global"]
        assert ops, (fixture, entry["triton_version"])
        assert {i.opcode for i in ops} == {opcode}
        assert {i.memory.width_bytes for i in ops} == {width}
        for i in ops:
            raw = raw_line(program, i.line)
            assert opcode in raw
            if kind == isa.ASYNC_COPY:
                assert ", 0x10" in raw  # the cp-size operand the width comes from


def test_aligned_gemm_has_no_narrow_global_loads():
    for entry in entries("gemm_aligned"):
        loads = instructions(program_of(entry), isa.GLOBAL_LOAD)
        assert all(i.memory.width_bytes >= 16 for i in loads), entry["triton_version"]


def test_shared_and_matrix_loads_on_sm80():
    program = program_of(entries("gemm_aligned", target="sm_80")[0])
    ldmatrix = [i for i in instructions(program, isa.SHARED_LOAD) if i.opcode.startswith("ldmatrix")]
    assert ldmatrix and {i.memory.width_bytes for i in ldmatrix} == {16}  # .x4 of 8x8 b16
    assert all(".x4." in raw_line(program, i.line) for i in ldmatrix)


def test_param_loads_are_scalar_loads():
    program = program_of(entries("add")[0])
    params = instructions(program, isa.SCALAR_LOAD)
    assert params and {i.memory.space for i in params} == {"param"}
    assert all(raw_line(program, i.line).strip().startswith("ld.param") for i in params)


def test_tma_copies_and_waits():
    program = program_of(entries("tma_gemm", version="3.9.0")[0])
    copies = instructions(program, isa.ASYNC_COPY)
    assert copies and all(i.opcode.startswith("cp.async.bulk.tensor") for i in copies)
    assert {(i.memory.space, i.memory.width_bytes) for i in copies} == {("tensor", None)}
    waits = {c for i in instructions(program, isa.WAIT) for c, _ in i.wait.counters}
    assert {"bulk_group", "wgmma_group", "mbarrier"} <= waits


def test_wait_counts_come_from_the_operand():
    program = program_of(entries("gemm_aligned", version="3.9.0")[0])
    waits = instructions(program, isa.WAIT)
    assert waits
    for i in waits:
        (counter, value), = i.wait.counters
        raw = raw_line(program, i.line)
        assert counter in ("async_group", "wgmma_group")
        assert raw.rstrip(";").split()[-1] == str(value)


# ---- source lines ---------------------------------------------------------------------

def test_global_access_maps_to_the_kernel_line():
    for entry in entries("gemm_aligned"):
        program = program_of(entry)
        copies = instructions(program, isa.ASYNC_COPY)
        mapped = [i for i in copies if i.source and i.source.file.endswith("/gemm.py")]
        assert mapped, entry["triton_version"]
        kernel = (FIXTURES / "kernels" / "gemm.py").read_text().split("\n")
        for i in mapped:  # the line holds the load: `a = tl.load(a_ptrs, ...)`
            assert "tl.load(" in kernel[i.source.line - 1], i.source


@pytest.mark.parametrize("version", VERSIONS)
def test_inline_chain_gives_the_kernel_line(version):
    """An instruction whose .loc is in standard.py (tl.cdiv) maps to the gemm.py line that called it.

    3.0-3.2 have the call site only in .debug_info; 3.3-3.8 write it in the .loc comment,
    3.9 in `inlined_at`.
    """
    program = program_of(entries("gemm_aligned", version=version)[0])
    inlined = [i for i in program.functions[0].instructions if i.source and i.source.inlined]
    assert inlined
    for i in inlined:
        assert i.source.file.endswith("/gemm.py") and i.source.line > 0
        assert i.source.inlined[0].file.endswith("/triton/language/standard.py")
        # the .loc right above the instruction names the innermost frame
        loc = next(raw_line(program, n) for n in range(i.line - 1, 0, -1) if ".loc" in raw_line(program, n))
        file_no, line_no = loc.split()[1:3]
        assert program.files[int(file_no)] == i.source.inlined[0].file
        assert int(line_no.rstrip(",")) == i.source.inlined[0].line


def test_nested_inline_chain():
    """spill.py calls tl.sum, which calls reduce: two helper frames, innermost first."""
    for entry in entries("spill"):
        if entry["triton_version"] < "3.3":
            continue  # 3.0-3.2 record one inlining level only
        chains = {len(i.source.inlined) for i in program_of(entry).functions[0].instructions if i.source}
        assert 2 in chains, entry["triton_version"]
        deep = next(i for i in program_of(entry).functions[0].instructions if i.source and len(i.source.inlined) == 2)
        assert deep.source.file.endswith("/spill.py")
        assert all(f.file.endswith("/standard.py") for f in deep.source.inlined)


# ---- loops ------------------------------------------------------------------------------

def back_edges(fn: isa.IsaFunction) -> list[tuple[int, int]]:
    return [(b.index, s) for b in fn.blocks for s in b.successors if fn.blocks[s].start <= b.start]


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_gemm_has_a_loop(target):
    for entry in entries("gemm_aligned", target=target):
        fn = program_of(entry).functions[0]
        edges = back_edges(fn)
        assert edges, entry["triton_version"]
        for source, header in edges:  # the branch at the end of the loop body goes back to the header
            last = fn.instructions[fn.blocks[source].end - 1]
            assert last.kind == isa.BRANCH and last.args[0] == fn.blocks[header].label


def test_loop_header_hints_are_branch_targets_of_later_blocks():
    hinted = 0
    for path in ptx_files():
        fn = parsed(path).functions[0]
        for block in fn.blocks:
            if block.loop_hint is not None:
                hinted += 1
                above = [raw_line(parsed(path), n) for n in range(max(block.line - 4, 1), block.line)]
                assert any(f"Loop Header: Depth={block.loop_hint}" in raw for raw in above), (path, block.line)
                assert any(block.index in b.successors for b in fn.blocks[block.index:]), (path, block.label)
    assert hinted >= 10


def test_inline_asm_labels_stay_in_their_block():
    """The TMA wait loop (`waitLoop:` inside an inline-asm `{ }`) is a one-block loop of its own."""
    for entry in entries("tma_gemm"):
        fn = program_of(entry).functions[0]
        loops = [b for b in fn.blocks if b.label and b.label.startswith("waitLoop@")]
        assert loops, entry["triton_version"]
        for b in loops:
            assert b.index in b.successors
            assert fn.instructions[b.end - 1].predicate == "!complete"


# ---- matrix ops ---------------------------------------------------------------------------

@pytest.mark.parametrize("target,family,shape,opcode", [
    ("sm_90", "wgmma", "64x128x16", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"),
    ("sm_80", "mma", "16x8x16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
])
def test_matrix_shapes(target, family, shape, opcode):
    for entry in entries("gemm_aligned", target=target):
        program = program_of(entry)
        ops = instructions(program, isa.MATRIX)
        assert ops and {i.opcode for i in ops} == {opcode}, entry["triton_version"]
        assert {(i.matrix.family, i.matrix.shape, i.matrix.out_type, i.matrix.in_type) for i in ops} == \
            {(family, shape, "f32", "f16")}
        assert all(opcode in raw_line(program, i.line) for i in ops)


# ---- directives and operands ------------------------------------------------------------

@pytest.mark.parametrize("version,directive", [
    ("3.0.0", ".maxntid"), ("3.2.0", ".reqntid"), ("3.6.0", ".reqntid"), ("3.9.0", ".reqntid"),
])
def test_thread_count_directive_per_version(version, directive):
    for entry in entries("gemm_aligned", version=version):
        program = program_of(entry)
        fact = program.facts["reqntid"]
        assert fact.origin.detail == directive
        assert fact.value[0] == entry["metadata"]["num_warps"] * 32
        raw = raw_line(program, fact.origin.line)
        assert raw.startswith(directive) and str(fact.value[0]) in raw
        assert len(fact.value) == (1 if version >= "3.4" else 3)


def test_maxnreg_fact():
    for entry in entries("gemm_maxnreg128", target="sm_90"):
        fact = program_of(entry).facts["maxnreg"]
        assert fact.value == 128 and raw_line(program_of(entry), fact.origin.line).strip() == ".maxnreg 128"


def test_operands_of_real_instructions():
    fn = program_of(entries("gemm_aligned", version="3.9.0")[0]).functions[0]
    args = {a for i in fn.instructions for a in i.args}
    kinds = {a: ptx_operand(a) for a in args}
    assert kinds["%tid.x"].kind == "special" and kinds["%ctaid.x"].kind == "special"
    reg = next(a for a in args if re.fullmatch(r"%r\d+", a))
    assert kinds[reg].kind == "reg" and kinds[reg].name == "%r" and kinds[reg].units() == (reg,)
    assert all(kinds[a].kind == "reg" for a in args if re.fullmatch(r"%(rd|p)\d+", a))
    assert all(kinds[a].kind == "address" for a in args if a.startswith("["))
    assert all(kinds[a].kind == "literal" for a in args if re.fullmatch(r"-?(0x[0-9a-f]+|\d+)", a))
    assert all(kinds[a].kind == "label" for a in args if a.startswith("$L__BB"))
    vectors = [a for a in args if a.startswith("{")]
    assert vectors and all(kinds[a].name == "vector" and ptx_registers(a) for a in vectors)
    assert all(kinds[a].kind != "other" for a in args if not a.startswith("{"))


# ---- malformed input ------------------------------------------------------------------------

@pytest.mark.parametrize("cut", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_truncated_ptx_keeps_what_was_read(cut):
    entry = entries("gemm_aligned", version="3.6.0")[0]
    path = FIXTURES / entry["cache"] / entry["dir"] / f"{entry['name']}.ptx"
    text = path.read_text()
    whole = parsed(path).functions[0]
    program = parse_ptx(text[: int(len(text) * cut)], str(path))
    if not program.functions:  # cut inside the header, before the body
        return
    kept = [i.text for i in program.functions[0].instructions]
    assert kept[:-1] == [i.text for i in whole.instructions[: max(len(kept) - 1, 0)]]
    if len(kept) < len(whole.instructions):
        assert any("file ends inside function" in u.reason for u in program.unparsed_in_code)


def test_binary_junk_is_an_error_naming_file_and_line():
    path = ptx_files("3.9.0")[0]
    lines = path.read_bytes().split(b"\n")
    junk = b"\n".join(lines[:39] + [b"\x00\xff\xfe\x7fELF"] + lines[40:])
    with pytest.raises(ArtifactError) as err:
        decode_text(junk, str(path))
    assert (err.value.path, err.value.line) == (str(path), 40)
    text = path.read_text().split("\n")
    with pytest.raises(ArtifactError) as err:
        parse_ptx("\n".join(text[:39] + ["\0\0\0"] + text[40:]), str(path))
    assert (err.value.path, err.value.line) == (str(path), 40)


def test_unknown_lines_in_a_body_are_counted_not_fatal():
    path = MALFORMED / "malformed_unknown_lines.ptx"
    program = parse_ptx(path.read_text(), str(path))
    fn = program.functions[0]
    assert [i.opcode for i in fn.instructions] == ["ld.param.u64", "mov.u32", "ret"]
    lines = path.read_text().split("\n")
    assert [(u.line, u.in_code) for u in program.unparsed] == [
        (n, True) for n, raw in enumerate(lines, 1) if "NOT_PTX" in raw or "%%" in raw]
