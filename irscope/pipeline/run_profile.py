"""`irscope scan script.py --profile[=counters]`, the runner's part: the child's command line, and the
measurements read back after the scan (docs/profile.md). "time": Proton in the child writes
`profile.hatchet` (irscope/pipeline/profile_session.py); "counters": the child runs under Nsight Compute,
which writes `counters.csv`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from irscope.model.report import Report
from irscope.parsers.ncu import METRICS as NCU_METRICS

PROFILE = "profile"  # Proton writes profile.hatchet
COUNTERS = "counters.csv"


def profiled_command(command: list[str], profile: str, work: Path) -> list[str]:
    """The child's command (before the script) with Proton's session, or under Nsight Compute."""
    if profile == "counters":
        return [ncu_path() or "ncu", "--csv", "--page", "raw", "--log-file", str(work / COUNTERS), "--metrics",
                ",".join(NCU_METRICS), "--profile-from-start", "off", *command, "--counters"]
    return [*command, "--profile", str(work / PROFILE)]


def attach_measurements(report: Report, profile: str, work: Path, unprofiled: str | None, log):
    """(report, RunProfile or None, why nothing was measured): `unprofiled` is the child's reason, if any."""
    launches = work / "launches.jsonl"
    if profile == "counters":
        report, unprofiled = attach_counters_file(report, work / COUNTERS, launches, unprofiled)
        run_profile = None
    else:
        report, run_profile, unprofiled = attach_profile_file(report, work / PROFILE, launches, unprofiled)
    if unprofiled:
        print(f"irscope: --profile{'=counters' if profile == 'counters' else ''}: {unprofiled}", file=log)
    return report, run_profile, unprofiled


def ncu_path() -> str | None:
    """Nsight Compute's command line: on PATH, else where the CUDA toolkit puts it."""
    found = shutil.which("ncu")
    if found:
        return found
    default = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "ncu"
    return str(default) if default.is_file() else None


def attach_counters_file(report: Report, counters_file: Path, launches: Path, unprofiled: str | None):
    """(report, why there are no counters): each profiled kernel's KernelCounters from Nsight Compute's CSV."""
    from irscope.model.errors import ArtifactError
    from irscope.pipeline.profiling import attach_counters

    if unprofiled is None:
        try:
            report = attach_counters(report, counters_file, launches)
        except ArtifactError as exc:
            unprofiled = str(exc)
    return report, unprofiled


def attach_profile_file(report: Report, profile_file: Path, launches: Path, unprofiled: str | None):
    """(report, RunProfile or None, why there is none: `unprofiled`, the child's reason, or the parent's)."""
    from irscope.model.errors import ArtifactError
    from irscope.pipeline.profiling import attach_profile

    hatchet = profile_file.with_name(profile_file.name + ".hatchet")
    run_profile = None
    if unprofiled is None and not hatchet.exists():
        unprofiled = "Proton wrote no profile (the script ended its process before irscope could ask it to)"
    elif unprofiled is None:
        try:
            report, run_profile = attach_profile(report, hatchet, launches)
        except ArtifactError as exc:
            unprofiled = str(exc)
    return report, run_profile, unprofiled
