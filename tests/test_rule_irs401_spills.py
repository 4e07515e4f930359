"""IRS401 spills, on the real fixtures: counts checked against the artifact text itself."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest, require_nvdisasm, rule_findings

from irscope.rules.irs401_spills import Spills

VERSIONS = ("3.2", "3.6", "3.9")
MANIFEST = load_manifest()
SCRATCH = re.compile(r"^\s*scratch_(load|store)_\w+")
FOLDED = re.compile(r"^\s*buffer_(load|store)_dword\b.*; \d+-byte Folded (Spill|Reload)")
LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s+\d+.*?;\s*(.*)$")


@pytest.fixture(scope="module")
def found():
    return {v: rule_findings(Spills, FIXTURES / "caches" / f"triton-{v}") for v in VERSIONS}


def entry(fixture: str, arch: str, version: str) -> dict:
    hits = [e for e in MANIFEST["kernels"] if e["cache"] == f"caches/triton-{version}" and e["fixture"] == fixture
            and e["target_name"] == arch]
    assert len(hits) == 1, (fixture, arch, version)
    return hits[0]


def kernel(found, fixture: str, arch: str, version: str):
    e = entry(fixture, arch, version)
    report, findings = found[version][e["dir"]]
    assert not [p for p in report.problems if "IRS401" in p.message]
    return e, report, findings


def artifact(e: dict, ext: str) -> list[str]:
    return (FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.{ext}").read_text().splitlines()


def metadata(lines: list[str], key: str) -> tuple[int, int]:
    """(1-based line, value) of `.key: N` in the amdhsa metadata."""
    hits = [(n, int(m.group(1))) for n, t in enumerate(lines, 1) if (m := re.match(rf"\s*\.{key}:\s+(\d+)$", t))]
    assert len(hits) == 1
    return hits[0]


def user_line_of_each(lines: list[str], source: str) -> dict[int, int | None]:
    """Artifact line -> the kernel-file line of the `.loc` in force there (outermost inline frame)."""
    out, current = {}, None
    for n, text in enumerate(lines, 1):
        if m := LOC.match(text):
            frames = re.findall(rf"{source}:(\d+):\d+", m.group(2))
            current = int(frames[-1]) if frames else None
        out[n] = current
    return out


def in_loop_lines(lines: list[str]) -> set[int]:
    """Lines in blocks LLVM marks as loop blocks (`; =>This Inner Loop Header`, `;   in Loop:`)."""
    out, looping = set(), False
    for n, text in enumerate(lines, 1):
        if re.match(r"^(\.LBB\d+_\d+:|; %bb\.\d+:)", text):
            looping = "Loop" in text
        elif looping:
            out.add(n)
    return out


@pytest.mark.parametrize("version, arch", [("3.2", "gfx942"), ("3.6", "gfx942"), ("3.6", "gfx950"),
                                           ("3.9", "gfx942")])
def test_amd_spill_kernel_scratch(found, version, arch):
    e, _, findings = kernel(found, "spill", arch, version)
    assert len(findings) == 1
    f = findings[0]
    lines = artifact(e, "amdgcn")
    scratch = [n for n, t in enumerate(lines, 1) if SCRATCH.match(t)]
    loads = [n for n in scratch if "scratch_load" in lines[n - 1]]
    spill_line, spills = metadata(lines, "vgpr_spill_count")
    size_line, size = metadata(lines, "private_segment_fixed_size")
    assert spills > 0 and size > 0 and scratch
    assert (f.severity, f.stage, f.path) == ("warning", "amdgcn", str(FIXTURES / e["cache"] / e["dir"] /
                                                                     f"{e['name']}.amdgcn"))
    assert f.message.startswith(f"{spills} VGPRs spilled (.vgpr_spill_count), {size} B of scratch per lane")
    assert f"{len(scratch)} scratch accesses ({len(loads)} loads, {len(scratch) - len(loads)} stores; " \
           f"none in a loop)" in f.message
    assert f.number("accesses") == len(scratch) and f.number("vgpr_spills") == spills
    assert set(f.lines) == set(scratch) | {spill_line, size_line}
    assert f.line == scratch[0] and SCRATCH.match(lines[f.line - 1])
    # The Python line: where most of the scratch accesses' `.loc` points (the tl.store, line 26).
    attributed = user_line_of_each(lines, "spill.py")
    most, n = Counter(attributed[line] for line in scratch if attributed[line]).most_common(1)[0]
    assert (f.python_line, f.python_file.rsplit("/", 1)[-1]) == (most, "spill.py")
    assert f"most ({n}) attributed to line {most}" in f.message
    source = (FIXTURES / "kernels" / "spill.py").read_text().splitlines()
    assert "tl.store" in source[f.python_line - 1]


def test_gfx90a_spills_through_the_scratch_buffer(found):
    """gfx90a has no scratch_* instructions: its spills are buffer ops LLVM marks as Folded Spill/Reload."""
    e, _, (f,) = kernel(found, "spill", "gfx90a", "3.6")
    lines = artifact(e, "amdgcn")
    folded = [n for n, t in enumerate(lines, 1) if FOLDED.match(t)]
    assert not any(SCRATCH.match(t) for t in lines)
    assert len(folded) == f.number("accesses") == 624
    assert set(folded) <= set(f.lines) and f.line == folded[0]


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_waves_per_eu_gemm_spills_in_the_k_loop(found, version):
    e, _, (f,) = kernel(found, "gemm_wpe3", "gfx942", version)
    lines = artifact(e, "amdgcn")
    scratch = [n for n, t in enumerate(lines, 1) if SCRATCH.match(t)]
    looped = [n for n in scratch if n in in_loop_lines(lines)]
    assert 0 < len(looped) < len(scratch)
    assert f.number("in_loop") == len(looped) and f"; {len(looped)} in loops)" in f.message
    _, spills = metadata(lines, "vgpr_spill_count")
    assert f.message.startswith(f"{spills} VGPRs spilled")


@pytest.mark.parametrize("version", VERSIONS)
def test_nvidia_spill_kernel_stack_frame(found, version):
    e, report, findings = kernel(found, "spill", "sm_90", version)
    stack = e["cuobjdump"]["STACK"]  # cuobjdump --dump-resource-usage, run when the fixture was built
    ptx = "\n".join(artifact(e, "ptx"))
    assert stack > 0 and not re.search(r"\b(ld|st)\.local\b", ptx)
    assert len(findings) == 1
    f = findings[0]
    assert (f.stage, f.line, f.severity) == ("cubin", None, "warning") and f.path.endswith(".cubin")
    assert f.message.startswith(f"a {stack}-byte stack frame per thread")
    assert "the PTX has no ld.local/st.local" in f.message and f.number("stack_bytes") == stack


def test_sgpr_spills_to_vgpr_lanes_are_info(found):
    e, _, (f,) = kernel(found, "gemm_unaligned", "gfx942", "3.9")
    lines = artifact(e, "amdgcn")
    line, sgprs = metadata(lines, "sgpr_spill_count")
    writelanes = [t for t in lines if re.match(r"^\s*v_writelane_b32\b", t)]
    assert metadata(lines, "private_segment_fixed_size")[1] == 0 and not any(SCRATCH.match(t) for t in lines)
    assert len(writelanes) == sgprs == 88
    assert (f.severity, f.line, f.lines) == ("info", line, (line,))
    assert f.message.startswith(f"{sgprs} SGPRs spilled (.sgpr_spill_count) with no scratch")


@pytest.mark.parametrize("version", VERSIONS)
def test_fires_exactly_where_the_compiler_reports_spills(found, version):
    """Every kernel without spill counts, scratch or stack is silent (add, softmax, aligned GEMMs ...)."""
    def spills(e):
        if "amdgcn" in e:
            a = e["amdgcn"]
            return any(a[k] for k in ("vgpr_spill_count", "sgpr_spill_count", "private_segment_fixed_size"))
        return bool(e["cuobjdump"]["STACK"] or e["cuobjdump"]["LOCAL"])

    expected = {e["dir"] for e in MANIFEST["kernels"] if e["cache"] == f"caches/triton-{version}" and spills(e)}
    fired = {key for key, (_, findings) in found[version].items() if findings}
    assert expected and fired == expected
    silent = [key for key, (r, _) in found[version].items() if r.kernel.name == "add_kernel"]
    assert silent and not fired & set(silent)


def test_sass_counts_the_spill_instructions():
    """With --sass the finding points at the STL/LDL themselves."""
    from irscope.isa.nvtools import disassemble
    from irscope.pipeline.analyze import scan
    from irscope.engine.selection import RuleSelection

    require_nvdisasm()
    e = entry("spill", "sm_90", "3.6")
    directory = FIXTURES / e["cache"] / e["dir"]
    report = scan([directory], sass=True, rules=RuleSelection.only(Spills))
    (f,) = [f for k in report.kernels for f in k.findings]
    text, _ = disassemble(str(directory / f"{e['name']}.cubin"))
    sass = text.splitlines()
    stl = [n for n, t in enumerate(sass, 1) if re.search(r"\bSTL(\.\w+)*\s", t)]
    ldl = [n for n, t in enumerate(sass, 1) if re.search(r"\bLDL(\.\w+)*\s", t)]
    assert f.stage == "sass" and Path(f.path).suffix == ".cubin"
    assert f.number("sass_accesses") == len(stl) + len(ldl) > 0 and set(f.lines) == set(stl) | set(ldl)
    assert f"{len(stl) + len(ldl)} LDL/STL accesses ({len(ldl)} loads, {len(stl)} stores;" in f.message
