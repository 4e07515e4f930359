"""A kernel's assembly in the scan: which ISAs are read, the instruction mix in the report,
and SASS only on request (and a warning, not a failure, when no disassembler is found)."""

from __future__ import annotations

from pathlib import Path


from conftest import FIXTURES, kernel_dirs, require_nvdisasm

import irscope
from irscope.isa import model as isa
from irscope.isa import nvtools
from irscope.isa.assembly import read_assembly
from irscope.cli.main import main
from irscope.model.report import Report


def _kernel(manifest, **where):
    d = kernel_dirs(manifest, cache="caches/triton-3.6", **where)[0]
    (k,) = irscope.scan(d).kernels
    return k


def test_amd_kernel_has_its_amdgcn_mix(manifest):
    r = _kernel(manifest, fixture="gemm_aligned", target_arch="gfx942")
    (mix,) = r.mix
    assert mix.isa == "amdgcn" and mix.function == "matmul_kernel" and mix.loops == 1
    assert mix.path == r.kernel.artifact("amdgcn").path
    assert mix.details(isa.GLOBAL_LOAD) == {"global:16B": mix.count(isa.GLOBAL_LOAD)}
    lines = Path(mix.path).read_text().split("\n")
    for row in mix.rows:
        if row.kind == isa.MATRIX:
            assert all(lines[n - 1].strip().startswith("v_mfma_f32_32x32x8") for n in row.lines)


def test_nvidia_kernel_reads_ptx_and_sass_only_when_asked(manifest):
    d = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="tile_copy_nohint", target_arch="sm_90")[0]
    (plain,) = irscope.scan(d).kernels
    assert [m.isa for m in plain.mix] == ["ptx"]
    require_nvdisasm()
    (both,) = irscope.scan(d, sass=True).kernels
    assert [m.isa for m in both.mix] == ["ptx", "sass"]
    ptx, sass = both.mix
    assert ptx.details(isa.GLOBAL_STORE) == {"global:2B": ptx.count(isa.GLOBAL_STORE)}
    assert sass.details(isa.GLOBAL_STORE) == {"global:2B": sass.count(isa.GLOBAL_STORE)}
    assert not both.problems


def test_without_a_disassembler_sass_is_a_warning_and_the_rest_is_read(manifest, monkeypatch):
    monkeypatch.setattr(nvtools, "_search", lambda name: (None, [f"(nowhere for {name})"]))
    d = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="add", target_arch="sm_90")[0]
    (r,) = irscope.scan(d, sass=True).kernels
    assert [m.isa for m in r.mix] == ["ptx"]
    assert r.resources is not None and r.resources.registers.value > 0
    (problem,) = r.problems
    assert problem.severity == "warning" and problem.path.endswith(".cubin")
    assert "nvdisasm" in problem.message and "TRITON_NVDISASM_PATH" in problem.message


def test_mix_survives_a_saved_report(tmp_path, manifest):
    d = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="softmax", target_arch="gfx942")[0]
    report = irscope.scan(d)
    path = tmp_path / "report.json"
    report.save(path)
    loaded = Report.load(path)
    assert loaded.kernels[0].mix == report.kernels[0].mix
    assert loaded.kernels[0].mix[0].count(isa.GLOBAL_LOAD) > 0


def test_unparsed_assembly_lines_become_a_warning(tmp_path, manifest):
    """A cache file overwritten with a foreign line: the kernel is still reported, the line named."""
    src = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="add", target_arch="gfx942")[0]
    work = tmp_path / src.name
    work.mkdir()
    for f in src.iterdir():
        (work / f.name).write_bytes(f.read_bytes())
    amdgcn = next(work.glob("*.amdgcn"))
    lines = amdgcn.read_text().split("\n")
    at = next(i for i, t in enumerate(lines) if t.startswith("\tglobal_load"))
    lines.insert(at, "\tthis is not an instruction")
    amdgcn.write_text("\n".join(lines))
    (r,) = irscope.scan(work).kernels
    assert r.resources is not None and r.mix[0].total > 0
    (problem,) = r.problems
    assert problem.severity == "warning" and problem.line == at + 1 and "not an instruction" in problem.message


def test_scan_cli_sass_flag_and_instruction_column(capsys, manifest):
    d = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="add", target_arch="gfx942")[0]
    assert main(["scan", str(d)]) == 0
    out = capsys.readouterr().out
    assert "instrs (loop)" in out
    (mix,) = irscope.scan(d).kernels[0].mix
    assert f"{mix.total:,} (0)" in out


def test_dump_directories_have_their_assembly_read():
    """TRITON_KERNEL_DUMP writes no metadata json; the .amdgcn is read all the same."""
    found = irscope.harvest(FIXTURES / "kernel_dump")
    assert {k.name for k in found.kernels} == {"matmul_kernel", "add_kernel"}
    for kernel in found.kernels:
        assembly = read_assembly(kernel)
        assert [p.isa for p in assembly.programs] == ["amdgcn"] and assembly.problems == ()
        assert assembly.program("amdgcn").function().name == kernel.name
