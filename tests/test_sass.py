"""SASS from the fixture cubins through nvdisasm (shipped in triton's wheel), and irscope.isa.nvtools.

Every cubin is disassembled once per test session (in threads) and parsed. Without
nvdisasm these tests fail when triton is installed (CI has it: it ships the tool) and
are skipped only where triton itself is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import FIXTURES, backend_entries, load_manifest, require_nvdisasm

from irscope.isa import model as isa
from irscope.isa import nvtools
from irscope.model.errors import ArtifactError
from irscope.parsers.ptx import parse_ptx
from irscope.parsers.sass import parse_sass, sass_operand

MANIFEST = load_manifest()
CUDA = backend_entries("cuda")
VERSIONS = sorted({e["triton_version"] for e in CUDA})
ADDRESS = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")  # `        /*0020*/                   S2R R7, SR_CTAID.X ;`


def cubin_of(entry: dict) -> Path:
    return FIXTURES / entry["cache"] / entry["dir"] / f"{entry['name']}.cubin"


@pytest.fixture(scope="module")
def sass() -> dict[Path, tuple[str, isa.IsaProgram]]:
    """Every fixture cubin's `nvdisasm -g -c` text and its parse, disassembled once."""
    require_nvdisasm()
    cubins = sorted({cubin_of(e) for e in CUDA})

    def one(cubin: Path) -> tuple[str, isa.IsaProgram]:
        text, problem = nvtools.disassemble(str(cubin))
        assert text is not None and problem is None, problem
        return text, parse_sass(text, str(cubin))

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return dict(zip(cubins, pool.map(one, cubins)))


def entries(fixture: str, target: str = "sm_90", version: str | None = None) -> list[dict]:
    found = [e for e in CUDA if e["fixture"] == fixture and e["target_name"] == target
             and (version is None or e["triton_version"] == version)]
    assert found, f"no fixture {fixture} {target} {version}"
    return found


def instructions(program: isa.IsaProgram, kind: str) -> list[isa.Instruction]:
    return [i for i in program.functions[0].instructions if i.kind == kind]


# ---- every cubin, every version -------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_every_cubin_disassembles_and_parses(sass, version):
    cubins = sorted({cubin_of(e) for e in CUDA if e["triton_version"] == version})
    assert cubins
    for cubin in cubins:
        text, program = sass[cubin]
        assert program.unparsed_in_code == (), (cubin, program.unparsed_in_code[:3])
        assert program.isa == "sass" and program.target and program.target.startswith("sm_")
        (fn,) = program.functions
        entry = next(e for e in CUDA if cubin_of(e) == cubin)
        assert fn.name == entry["name"]
        lines = text.split("\n")
        # one Instruction per `/*addr*/` line, in address order, each from its own line
        assert len(fn.instructions) == sum(1 for raw in lines if ADDRESS.match(raw))
        assert [i.address for i in fn.instructions] == sorted(i.address for i in fn.instructions)
        assert all(f"/*{i.address:04x}*/" in lines[i.line - 1] and i.opcode in lines[i.line - 1]
                   for i in fn.instructions)
        assert all(0 <= s < len(fn.blocks) for b in fn.blocks for s in b.successors)
        assert any(i.opcode == "EXIT" for i in fn.instructions)


# ---- widths a reader can grep -------------------------------------------------------------

@pytest.mark.parametrize("fixture,kind,opcode,width", [
    ("tile_copy_nohint", isa.GLOBAL_STORE, "STG.E.U16", 2),
    ("tile_copy_hint", isa.GLOBAL_STORE, "STG.E.128", 16),
    ("gemm_unaligned", isa.GLOBAL_LOAD, "LDG.E.U16", 2),
    ("gemm_aligned", isa.ASYNC_COPY, "LDGSTS.E.BYPASS.128", 16),
])
def test_global_access_widths(sass, fixture, kind, opcode, width):
    for entry in entries(fixture):
        text, program = sass[cubin_of(entry)]
        ops = instructions(program, kind)
        assert ops, (fixture, entry["triton_version"])
        assert {i.opcode for i in ops} == {opcode}
        assert {(i.memory.space, i.memory.width_bytes) for i in ops} == {("global", width)}
        assert all(f" {opcode} " in text.split("\n")[i.line - 1] for i in ops)


def test_aligned_gemm_loads_nothing_narrow(sass):
    for entry in entries("gemm_aligned"):
        _, program = sass[cubin_of(entry)]
        assert not [i for i in instructions(program, isa.GLOBAL_LOAD) if i.memory.width_bytes < 16]


def test_spills_are_local_accesses(sass):
    for entry in entries("spill"):
        _, program = sass[cubin_of(entry)]
        spills = instructions(program, isa.LOCAL_STORE) + instructions(program, isa.LOCAL_LOAD)
        assert spills and all(i.opcode.split(".")[0] in ("STL", "LDL") for i in spills)
        assert {i.memory.space for i in spills} == {"local"}
        assert {i.memory.width_bytes for i in spills} <= {4, 8, 16}


def test_ldsm_and_dummy_lds(sass):
    _, program = sass[cubin_of(entries("gemm_aligned", target="sm_80")[0])]
    ldsm = [i for i in instructions(program, isa.SHARED_LOAD) if i.opcode.startswith("LDSM")]
    assert ldsm and {i.memory.width_bytes for i in ldsm} == {16}  # .4 = four 8x8 b16 tiles
    never = [i for i in program.functions[0].instructions if i.predicate == "!PT"]
    assert all(i.kind == isa.OTHER and i.memory is None for i in never)


def test_depbar_waits_name_their_scoreboard(sass):
    text, program = sass[cubin_of(entries("gemm_aligned", version="3.9.0")[0])]
    waits = instructions(program, isa.WAIT)
    counters = {c for i in waits for c, _ in i.wait.counters}
    assert {"SB0", "gsb0"} <= counters
    for i in waits:
        raw = text.split("\n")[i.line - 1]
        for counter, value in i.wait.counters:
            assert counter in raw and (f"{value:#x}" in raw or value == 0)


# ---- source lines, loops, matrix ops --------------------------------------------------------

def test_global_access_maps_to_the_kernel_line(sass):
    kernel = (FIXTURES / "kernels" / "gemm.py").read_text().split("\n")
    for entry in entries("gemm_aligned"):
        _, program = sass[cubin_of(entry)]
        copies = [i for i in instructions(program, isa.ASYNC_COPY) if i.source]
        assert copies and all(i.source.file.endswith("/gemm.py") for i in copies), entry["triton_version"]
        assert all("tl.load(" in kernel[i.source.line - 1] for i in copies)


def test_inlined_at_lines_with_gi():
    nvdisasm = require_nvdisasm()
    cubin = cubin_of(entries("gemm_aligned", version="3.9.0")[0])
    text = subprocess.run([nvdisasm, "-gi", "-c", str(cubin)], capture_output=True, text=True, check=True).stdout
    program = parse_sass(text, str(cubin))
    assert program.unparsed_in_code == ()
    inlined = [i for i in program.functions[0].instructions if i.source and i.source.inlined]
    assert inlined
    assert all(i.source.file.endswith("/gemm.py") and i.source.inlined[0].file.endswith("/standard.py")
               for i in inlined)


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_gemm_has_a_loop(sass, target):
    for entry in entries("gemm_aligned", target=target):
        _, program = sass[cubin_of(entry)]
        fn = program.functions[0]
        edges = [(b, s) for b in fn.blocks for s in b.successors if fn.blocks[s].start <= b.start]
        loops = [(b, s) for b, s in edges if any(i.kind == isa.MATRIX for i in
                                                 fn.instructions[fn.blocks[s].start:b.end])]
        assert loops, entry["triton_version"]  # the K loop: a back edge around the matrix ops
        for b, header in loops:  # the loop ends in a branch back to the header's label
            last = fn.instructions[b.end - 1]
            assert last.opcode == "BRA" and last.args == (f"`({fn.blocks[header].label})",)


@pytest.mark.parametrize("target,opcode,family,shape", [
    ("sm_90", "HGMMA.64x128x16.F32", "hgmma", "64x128x16"),
    ("sm_80", "HMMA.16816.F32", "hmma", "16x8x16"),
])
def test_matrix_shapes(sass, target, opcode, family, shape):
    for entry in entries("gemm_aligned", target=target):
        _, program = sass[cubin_of(entry)]
        ops = instructions(program, isa.MATRIX)
        assert ops and {i.opcode for i in ops} == {opcode}, entry["triton_version"]
        assert {(i.matrix.family, i.matrix.shape, i.matrix.out_type) for i in ops} == {(family, shape, "f32")}


def test_tma_copies(sass):
    _, program = sass[cubin_of(entries("tma_gemm", version="3.9.0")[0])]
    copies = instructions(program, isa.ASYNC_COPY)
    assert copies and {i.opcode.split(".")[0] for i in copies} <= {"UTMALDG", "UTMASTG"}
    assert {(i.memory.space, i.memory.width_bytes) for i in copies} == {("tensor", None)}


def test_operands_of_real_instructions(sass):
    _, program = sass[cubin_of(entries("gemm_aligned", version="3.9.0")[0])]
    args = {a for i in program.functions[0].instructions for a in i.args}
    kinds = {a: sass_operand(a) for a in args}
    reused = next(a for a in args if a.startswith("R") and a.endswith(".reuse"))
    assert kinds[reused].kind == "reg" and kinds[reused].name == "R"
    assert kinds[reused].units() == (reused.split(".")[0],)
    assert kinds["RZ"].kind == "special" and kinds["SR_TID.X"].kind == "special"
    assert all(kinds[a].kind == "address" for a in args if "[" in a)
    assert all(kinds[a].kind == "label" for a in args if a.startswith("`("))
    assert all(kinds[a].kind == "literal" for a in args if a.startswith("0x"))
    assert all(kinds[a].kind == "reg" for a in args if a[:2] in ("UR", "P0", "P1") and a[2:].isdigit())


# ---- cuobjdump, missing tools, failures --------------------------------------------------------

def test_cuobjdump_output_gives_the_same_program(sass):
    require_nvdisasm()
    cuobjdump = nvtools.find_tool("cuobjdump")
    assert cuobjdump is not None
    cubin = cubin_of(entries("gemm_aligned", version="3.9.0")[0])
    text = subprocess.run([cuobjdump.path, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    program = parse_sass(text, str(cubin))
    _, reference = sass[cubin]
    assert program.unparsed_in_code == () and program.target == reference.target
    fn, ref = program.functions[0], reference.functions[0]
    assert fn.name == ref.name
    assert [(i.opcode, i.address, i.kind, i.memory) for i in fn.instructions] == \
        [(i.opcode, i.address, i.kind, i.memory) for i in ref.instructions]
    assert [(b.start, b.successors) for b in fn.blocks] == [(b.start, b.successors) for b in ref.blocks]
    assert all(i.source is None for i in fn.instructions)  # cuobjdump prints no line info


def test_no_tool_is_a_warning_and_ptx_still_parses(monkeypatch):
    monkeypatch.setattr(nvtools, "_search", lambda name: (None, [f"{name}: nowhere"]))
    assert nvtools.find_tool("nvdisasm") is None
    entry = entries("gemm_aligned", version="3.6.0")[0]
    program, problem = nvtools.load_sass(str(cubin_of(entry)))
    assert program is None and problem is not None and problem.severity == "warning"
    assert problem.path == str(cubin_of(entry))
    for hint in ("not found", "install triton", "TRITON_NVDISASM_PATH", "PATH"):
        assert hint in problem.message
    ptx = FIXTURES / entry["cache"] / entry["dir"] / f"{entry['name']}.ptx"
    assert parse_ptx(ptx.read_text(), str(ptx)).functions[0].instructions


def test_failing_nvdisasm_falls_back_to_cuobjdump(tmp_path, monkeypatch):
    require_nvdisasm()
    broken = tmp_path / "nvdisasm"
    broken.write_text("#!/bin/sh\necho 'nvdisasm fatal : unsupported architecture' >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("TRITON_NVDISASM_PATH", str(broken))
    assert nvtools.find_tool("nvdisasm") == (str(broken), "env:TRITON_NVDISASM_PATH")
    cubin = cubin_of(entries("add", version="3.9.0")[0])
    text, problem = nvtools.disassemble(str(cubin))
    assert text is not None and "Function : add_kernel" in text
    assert problem.severity == "warning" and "cuobjdump" in problem.message and "exit status 3" in problem.message
    assert parse_sass(text, str(cubin)).functions[0].instructions


def test_disassembly_writes_nothing_next_to_the_cubin(tmp_path):
    require_nvdisasm()
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(cubin_of(entries("add", version="3.9.0")[0]).read_bytes())
    program, problem = nvtools.load_sass(str(cubin))
    assert problem is None and program.functions[0].name == "add_kernel"
    assert program.facts["registers"].value > 0  # from the cubin's .nv.info
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.cubin"]


def test_not_a_cubin_is_a_warning(tmp_path):
    require_nvdisasm()
    junk = tmp_path / "junk.cubin"
    junk.write_bytes(b"\x7fELF not really")
    program, problem = nvtools.load_sass(str(junk))
    assert program is None and problem.severity == "warning" and "failed" in problem.message
    program, problem = nvtools.load_sass(str(tmp_path / "missing.cubin"))
    assert program is None and "does not exist" in problem.message


def test_tool_search_order(monkeypatch, tmp_path):
    monkeypatch.delenv("TRITON_NVDISASM_PATH", raising=False)
    found = nvtools.find_tool("nvdisasm")
    if found is not None and importlib.util.find_spec("triton") is not None:
        assert found.rule == "triton package" and found.path.endswith("/backends/nvidia/bin/nvdisasm")
    monkeypatch.setenv("TRITON_NVDISASM_PATH", str(tmp_path / "absent"))
    assert nvtools.find_tool("nvdisasm") == found  # an unusable env value falls through to the next rule


def test_importing_nvtools_runs_and_imports_nothing_heavy():
    code = ("import subprocess, sys\n"
            "def refuse(*a, **k): raise AssertionError('ran a process at import')\n"
            "subprocess.run = subprocess.Popen = refuse\n"
            "import irscope.isa.nvtools\n"
            "assert 'triton' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---- malformed text ---------------------------------------------------------------------------

def test_truncated_disassembly_keeps_what_was_read(sass):
    cubin = cubin_of(entries("gemm_aligned", version="3.9.0")[0])
    text, whole = sass[cubin]
    for cut in (0.2, 0.5, 0.8):
        program = parse_sass(text[: int(len(text) * cut)], str(cubin))
        kept = program.functions[0].instructions
        assert 0 < len(kept) < len(whole.functions[0].instructions)
        assert [i.opcode for i in kept[:-1]] == [i.opcode for i in whole.functions[0].instructions[: len(kept) - 1]]


def test_nul_in_disassembly_is_an_error_naming_the_line(sass):
    cubin = cubin_of(entries("add", version="3.9.0")[0])
    lines = sass[cubin][0].split("\n")
    with pytest.raises(ArtifactError) as err:
        parse_sass("\n".join(lines[:39] + ["\x00\x01"] + lines[40:]), str(cubin))
    assert (err.value.path, err.value.line) == (str(cubin), 40)
