"""The test session cleans up after itself (issue 22 item 24): no temporary directory of its own is
left behind once pytest exits, so a CI box or a developer's /tmp does not fill run after run."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_a_test_session_leaves_no_temporary_directory(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    env.pop("IRSCOPE_CACHE_DIR", None)  # the session makes its own, under TMPDIR
    # A test that scans with the CLI's default result index writes into the session's cache directory.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                           str(tmp_path / "basetemp"), "tests/test_result_index.py::"
                           "test_a_warm_scan_reads_every_kernel_from_the_index"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in tmp.iterdir()) == []
