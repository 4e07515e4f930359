"""irscope.load, Report.find and irscope.testing's assertions, on the real fixture caches."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

import irscope
from irscope.engine.selection import RuleConfigError
from irscope.testing import assert_no_findings, assert_occupancy

BEFORE = FIXTURES / "before_after" / "before"
AFTER = FIXTURES / "before_after" / "after"


@pytest.fixture(scope="module")
def before():
    return irscope.load(BEFORE)


def test_load_gives_kernels_with_findings_resources_and_occupancy(before):
    assert len(before.kernels) == 3
    (matmul,) = before.find("matmul_kernel")
    assert matmul.resources.vgpr_total.value == 308
    assert (matmul.occupancy.occupancy.active, matmul.occupancy.occupancy.limiters) == (1, ("vgpr",))
    assert {f.code for f in matmul.findings} >= {"IRS101", "IRS102", "IRS404"}
    assert [r.kernel.target.arch for r in before.find("tile_*")] == ["gfx942", "sm_90"]
    assert len(before.find("*", arch="sm_90")) == 1 and before.find("nothing") == ()


def test_load_selects_rules_as_the_command_line_does(tmp_path, monkeypatch):
    only = irscope.load(BEFORE, select="IRS1", ignore=["narrow-lds-access"])
    assert {f.code for r in only.kernels for f in r.findings} == {"IRS101", "IRS102"}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.irscope]\nselect = ["IRS4"]\n')
    assert {f.code for r in irscope.load(BEFORE).kernels for f in r.findings} == {"IRS404"}
    assert {f.code for r in irscope.load(BEFORE, config=False).kernels for f in r.findings} > {"IRS404"}
    with pytest.raises(RuleConfigError, match="IRS999"):
        irscope.load(BEFORE, select="IRS999")


def test_load_reads_a_saved_report_and_keeps_the_selected_findings(before, tmp_path):
    saved = tmp_path / "report.json"
    before.save(saved)
    again = irscope.load(saved, select="IRS102")
    assert [r.kernel.key for r in again.kernels] == [r.kernel.key for r in before.kernels]
    assert {f.code for r in again.kernels for f in r.findings} == {"IRS102"}
    with pytest.raises(ValueError, match="one saved report"):
        irscope.load([saved, AFTER])


def test_assert_no_findings_passes_when_the_selected_rules_found_nothing(before):
    assert_no_findings(before.find("*", arch="sm_90"), select=["IRS2", "IRS4"])
    assert_no_findings(before, select="IRS1", ignore="IRS1")
    assert_no_findings(irscope.load(AFTER).find("tile_copy_kernel"))


def test_assert_no_findings_fails_with_the_findings_as_scan_prints_them(before):
    (tile,) = before.find("tile_copy_kernel", arch="gfx942")
    with pytest.raises(AssertionError) as failed:
        assert_no_findings(tile, select="IRS1", ignore="narrow-lds-access")
    lines = str(failed.value).splitlines()
    assert lines[0] == "1 finding(s) of IRS1 (ignoring narrow-lds-access):"
    assert lines[1] == "tile_copy_kernel  gfx942  JR36GY4NIZ3XWFDMNJXMCQYNVFRGK6WJPWXVMKAKKHPY5BEIM7FA"
    assert lines[2].startswith("  warning IRS102 narrow-global-store  ") and lines[2].endswith("tile_copy.py:34)")
    assert lines[3].startswith("      16 global stores of 2 B per lane") and lines[4].startswith("      fix: ")
    assert lines[-1] == "`irscope explain IRS102` says more"


def test_assert_no_findings_rejects_an_empty_selection_of_kernels(before):
    with pytest.raises(AssertionError, match="no kernel to check"):
        assert_no_findings(before.find("matmul_kernl"))
    with pytest.raises(RuleConfigError):
        assert_no_findings(before, select="IRS999")


def test_assert_occupancy(before):
    assert_occupancy(before.find("tile_copy_kernel"), at_least=2)
    with pytest.raises(AssertionError) as failed:
        assert_occupancy(before, at_least=2)
    text = str(failed.value)
    assert text.startswith("occupancy 1 of 8 waves/SIMD, expected at least 2:\n"
                           "matmul_kernel  gfx942  DNJLTEIORMFVQKYKKSO62XZMPICNRLGPDKQJ4YLLC24DTMFWMJ5A\n")
    assert "limited by          vgpr" in text and "vgprs = 308" in text and ".vgpr_count" in text
    assert "to gain             use at most 256 VGPRs (now 308): 2 waves/SIMD; ask with waves_per_eu=2" in text
    assert "tile_copy_kernel" not in text  # only the kernels below the bar
