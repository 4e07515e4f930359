"""What `irscope`'s exit status says (README "Exit codes"), and which one wins when several apply.

  0  clean: the command ran and every kernel was analyzed in full
  1  a gate the user asked for tripped: `scan --fail-on SEVERITY` (a finding at or above it),
     `diff --fail-on regression` (a pair regressed)
  2  unusable input: a missing, empty or unreadable path, nothing that is a Triton kernel, a named
     `.json` that is neither a saved scan report nor Triton metadata, a malformed saved report, a bad argument,
     an output FILE that cannot be written or lies inside a scanned path, `tui` without a
     terminal, an internal error (one line; `--debug` shows the traceback)
  3  partial results: some kernel could not be analyzed in full (an error-severity problem on a
     kernel or on the run: a broken or unreadable artifact, a link not followed), or the script
     of `scan script.py` failed after compiling kernels; what could be read is reported

Precedence 2 > 3 > 1 > 0: the worst state of the input wins. A gate's verdict is only as good
as what it saw: with a kernel unread, "no finding" may be a finding missed, and "a finding"
may not be all of them. So 3 outranks 1 (CI fails either way, and the first thing to fix is the
input); and 2 outranks everything, since then there is no result at all.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3

_PRECEDENCE = (EXIT_USAGE, EXIT_PARTIAL, EXIT_GATE, EXIT_OK)


def worst(*codes: int) -> int:
    """The exit status that wins among `codes` (2 > 3 > 1 > 0)."""
    return next((c for c in _PRECEDENCE if c in codes), EXIT_OK)


def unanalyzed(report) -> list[str]:
    """Where a Report lost data: the keys of kernels with an error-severity problem, and the paths
    of the run's own error-severity problems (a directory that could not be read)."""
    return [r.kernel.key for r in report.kernels if any(p.severity == "error" for p in r.problems)] + \
        [p.path for p in report.problems if p.severity == "error"]


def findings_at_or_above(report, severity: str) -> int:
    """How many findings of the report are at `severity` or more serious."""
    from irscope.model.findings import SEVERITIES

    worse = set(SEVERITIES[:SEVERITIES.index(severity) + 1])
    return sum(f.severity in worse for r in report.kernels for f in r.findings)
