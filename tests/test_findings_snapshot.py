"""Every finding of every rule over the whole fixture corpus, as committed text.

One line per finding: `kernel-dir name code severity stage:line py:line message`. A change
to any rule's output shows up here as a diff to review; the file is rewritten only with
`python -m pytest tests/test_findings_snapshot.py --update-snapshots`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from irscope.pipeline.analyze import scan

SNAPSHOT = Path(__file__).parent / "snapshots" / "findings.txt"
ROOTS = ("caches", "before_after", "kernel_dump")


@pytest.fixture(scope="module")
def serial_report():
    return scan([FIXTURES / root for root in ROOTS], jobs=1)


def snapshot_lines(report) -> list[str]:
    lines = []
    for r in report.kernels:
        where = Path(r.kernel.directory).resolve().relative_to(FIXTURES)
        for f in r.findings:
            py = f"py:{f.python_line}" if f.python_line is not None else "py:-"
            lines.append(f"{where} {r.kernel.name} {f.code} {f.severity} {f.stage}:{f.line} {py} {f.message}")
    return sorted(lines)


def test_findings_match_the_snapshot(request, serial_report):
    current = snapshot_lines(serial_report)
    text = "\n".join(current) + "\n"
    if request.config.getoption("--update-snapshots"):
        SNAPSHOT.write_text(text)
        pytest.skip(f"rewrote {SNAPSHOT.name}: {len(current)} findings")
    assert SNAPSHOT.exists(), "no snapshot yet: run with --update-snapshots"
    expected = SNAPSHOT.read_text().splitlines()
    added = sorted(set(current) - set(expected))
    removed = sorted(set(expected) - set(current))
    assert not added and not removed, (
        f"findings changed (review, then --update-snapshots): +{len(added)} -{len(removed)}\n"
        + "\n".join(["+ " + a for a in added[:20]] + ["- " + r for r in removed[:20]]))


def test_workers_and_the_result_index_change_no_result(serial_report, tmp_path, monkeypatch):
    """Two worker processes, then a re-scan read from the result index: the same findings
    and, beyond the snapshot, the same KernelReports in the same order."""
    import irscope.pipeline.analyze as pipeline

    roots = [FIXTURES / root for root in ROOTS]
    index = tmp_path / "index"
    parallel = scan(roots, jobs=2, index=index)
    assert (index / "results.sqlite3").is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("analyzed again: the index was not used")

    monkeypatch.setattr(pipeline, "analyze_kernel", refuse)
    warm = scan(roots, jobs=2, index=index)
    expected = snapshot_lines(serial_report)
    for report in (parallel, warm):
        assert snapshot_lines(report) == expected
        assert report.kernels == serial_report.kernels
