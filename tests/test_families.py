"""Kernel families and the config sweep view (issue 23), over fixtures/sweep/: gemm_sweep.py's 84
autotune configs compiled for gfx942 and sm_90 by `irscope scan gemm_sweep.py --target`."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.cells import cell_len
from rich.console import Console
from test_tables_fit import WIDTHS, _check_fits, _parse

from irscope.occupancy.families import families, report_json
from irscope.render.console import render, short_key
from irscope.render.families import config_table, family_block

# What a workgroup (block) may have: Triton refuses to launch more (occupancy.md; gfx942's 64 KiB
# LDS, sm_90's 228 KiB of shared memory less the 1 KiB reserved per block).
LAUNCH_LIMIT = {"gfx942": 65536, "sm_90": 227 * 1024}


def _family(report):
    (family,) = [f for f in families(report.kernels) if len(f.configs) > 1]
    return family


def _console(report, width: int, **how) -> str:
    out = io.StringIO()
    render(report, Console(file=out, width=width, color_system=None), **how)
    return out.getvalue()


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_the_84_configs_are_one_family_whose_autotuned_parameters_vary(sweep_reports, target):
    report = sweep_reports[target]
    family = _family(report)
    assert len(family.configs) == len(report.kernels) == 84
    expected = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps"} | (
        {"matrix_instr_nonkdim"} if target == "gfx942" else {"num_stages"})
    assert set(family.varying) == expected  # GROUP_M is 8 in every config: not a column
    params = {c.params for c in family.configs}
    assert len(params) == 84  # the varying parameters tell every config apart
    assert {c.kernel for c in family.configs} == {r.kernel.key for r in report.kernels}


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_the_autotuner_choice_is_marked_not_measured_under_target(sweep_reports, target):
    family = _family(sweep_reports[target])
    assert family.autotune == "not measured"
    (chosen,) = [c for c in family.configs if c.chosen]
    # the stand-in times every config the same, so the autotuner keeps the script's first one
    first = {"BLOCK_M": "64", "BLOCK_N": "64", "BLOCK_K": "32", "num_warps": "4"}
    assert {n: v for n, v in chosen.params if n in first} == first
    text = _console(sweep_reports[target], 200)
    assert "autotuner: not measured" in text


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_the_sweep_marks_every_config_that_cannot_launch(sweep_reports, target):
    report = sweep_reports[target]
    family = _family(report)
    kernels = {r.kernel.key: r for r in report.kernels}
    over = {c.kernel for c in family.configs if kernels[c.kernel].kernel.options.shared.value > LAUNCH_LIMIT[target]}
    assert over  # the sweep reaches past the target's LDS / shared memory
    assert {c.kernel for c in family.configs if c.fit.launches is False} == over
    assert all(c.fit.launches for c in family.configs if c.kernel not in over)
    limit = f"> {LAUNCH_LIMIT[target]:,} B"
    assert all(limit in c.fit.why[0] for c in family.configs if c.kernel in over)
    # the --sweep table: a row per config, "no" in the launch column exactly for those
    header, rows, _ = _parse(config_table(family, kernels, None).plain)
    launch, key = header.index("launch"), header.index("key")
    shown = {row[key]: row[launch] for row in rows}
    assert len(rows) == 84
    assert {k for k, v in shown.items() if v == "no"} == {short_key(c.kernel) for c in family.configs
                                                          if c.kernel in over}
    text = _console(report, 200, sweep=True)
    assert text.count("cannot launch:") >= 1 and limit in text


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
@pytest.mark.parametrize("width", WIDTHS)
def test_the_family_view_is_a_tenth_of_the_per_config_report(sweep_reports, target, width):
    report = sweep_reports[target]
    family_lines = _console(report, width).splitlines()
    per_config = _console(report, width, every_config=True).splitlines()
    assert len(family_lines) * 10 <= len(per_config), (len(family_lines), len(per_config))


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_every_per_config_finding_is_accounted_for_in_a_family_line(sweep_reports, target):
    report = sweep_reports[target]
    family = _family(report)
    position = {c.kernel: i for i, c in enumerate(family.configs)}
    lines = {(s.code, s.python): set(s.configs) for s in family.findings}
    count = 0
    for r in report.kernels:
        for f in r.findings:
            python = f"{f.python_file}:{f.python_line}" if f.python_line is not None else None
            assert position[r.kernel.key] in lines[(f.code, python)], (f.code, python, r.kernel.key)
            count += 1
    assert count > 100
    assert sum(len(configs) for configs in lines.values()) == len({
        (r.kernel.key, f.code, f.python_line) for r in report.kernels for f in r.findings})
    # and each family line is printed, with its count of configs
    text = _console(report, 200)
    for s in family.findings:
        assert re.search(rf"{s.code} {s.slug} .* in {len(s.configs)} of 84 configs", text), s.code


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
@pytest.mark.parametrize("width", WIDTHS)
def test_the_family_view_fits_the_terminal(sweep_reports, target, width):
    report = sweep_reports[target]
    family = _family(report)
    kernels = {r.kernel.key: r for r in report.kernels}
    for sweep in (False, True):
        text = "\n".join(line.plain for line in family_block(family, kernels, width, sweep))
        assert all(cell_len(line) <= width for line in text.splitlines()), max(text.splitlines(), key=cell_len)
        wide = "\n".join(line.plain for line in family_block(family, kernels, None, sweep))
        rows = _check_fits(text, wide, width, name_column="#", key=None)  # no number cut
        # by default the 10 most serious that launch, and the autotuner's choice
        chosen = next(f"#{i + 1}*" for i, c in enumerate(family.configs) if c.chosen)
        assert chosen in {r[0] for r in rows} and len(rows) == (84 if sweep else 11)
    assert all(cell_len(line) <= width for line in _console(report, width).splitlines())


def test_json_keeps_every_kernel_and_adds_the_families(sweep_reports):
    report = sweep_reports["gfx942"]
    data = json.loads(report_json(report))
    assert len(data["kernels"]) == 84
    (family,) = [f for f in data["families"] if len(f["configs"]) > 1]
    keys = {k["kernel"]["key"] for k in data["kernels"]}
    assert {c["kernel"] for c in family["configs"]} == keys
    assert family["autotune"] == "not measured"
    assert sum(c["chosen"] for c in family["configs"]) == 1


def test_a_family_shares_its_signature_and_configs_of_other_specializations_are_apart(corpus_report):
    """The corpus caches hold matmul_kernel for gfx942 with and without divisibility hints (other
    specializations, other families) and an autotuned kernel's configs (one family)."""
    found = families(corpus_report.kernels)
    by_key = {r.kernel.key: r for r in corpus_report.kernels}
    for family in found:
        members = [by_key[c.kernel] for c in family.configs]
        assert len({(r.kernel.name, r.kernel.target.arch, r.kernel.triton_version.value,
                     r.specialization.signature if r.specialization else None) for r in members}) == 1
    gemm = [f for f in found if f.name == "matmul_kernel" and f.arch == "gfx942" and f.triton == "3.6.0"]
    assert len({f.signature for f in gemm}) == len(gemm) > 1
    assert sum(len(f.configs) for f in found) == len(corpus_report.kernels)


def test_all_lists_every_config_as_before(sweep_reports):
    report = sweep_reports["sm_90"]
    text = _console(report, 200, every_config=True)
    assert "Kernel families" not in text and "84 kernels" in text
    assert text.count("matmul_kernel  sm_90") == 84  # a findings heading per config


def test_on_a_real_gpu_the_autotuners_choice_and_timings_are_shown(sweep_reports):
    """fixtures/sweep/sm_90-h100.tar.xz: gemm_sweep.py run on an H100 (no --target): Triton's autotuner
    timed every config that launches, and kept the fastest."""
    report = sweep_reports["sm_90-h100"]
    family = _family(report)
    assert family.autotune == "measured"
    (chosen,) = [c for c in family.configs if c.chosen]
    timed = [c for c in family.configs if c.ms is not None]
    assert {c.kernel for c in timed} == {c.kernel for c in family.configs if c.fit.launches}
    assert chosen.ms == min(c.ms for c in timed)
    text = _console(report, 200)
    assert "tuned ms" in text and "the config the autotuner chose" in text
    header, rows, _ = _parse(text[text.index("┏"):])
    mine = [row for row in rows if row[0].endswith("*")]
    assert len(mine) == 1 and mine[0][header.index("tuned ms")] == f"{chosen.ms:.3f}"
