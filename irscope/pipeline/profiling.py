"""`irscope scan script.py --profile`: join the profile Proton wrote to the kernels irscope analyzed.

Each timed kernel in the profile sits under the scope of its launch (`irscope:launch:N`, N its number in
the launches file, whose line names the kernel's hash) or of its kernel (`irscope:kernel:<hash>`, past
the first MAX_LAUNCH_SCOPES launches). Kernels under neither are the script's other GPU work. Nothing the
autotuners ran while timing their configs is in the profile: the session was paused meanwhile.
After the scan, as the configs and timelines are: the analyses do not read times.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from irscope.model.profile import MAX_LAUNCH_TIMES, KernelTime, OtherKernel, RunProfile
from irscope.model.report import Report
from irscope.model.serde import loads_bounded

MAX_OTHERS = 50  # the other kernels kept by name, most time first; the rest are summed in the run's total


class _Tally:
    def __init__(self) -> None:
        self.launches = self.ns = 0
        self.bytes: int | None = None
        self.timed: list[tuple[int, int]] = []  # (launch number, ns) of single launches


def numbered_launches(path: str | Path) -> dict[int, tuple[str, str | None, int | None]]:
    """Launch number -> (kernel hash, name, bytes of its tensors) of the launches that got a scope of their
    own (not the autotuner's, not past MAX_LAUNCH_SCOPES) from the launches file; lines written without
    --profile have no number. The file is the script's: values are checked."""
    from irscope.pipeline.profile_session import MAX_LAUNCH_SCOPES

    out: dict[int, tuple[str, str | None, int | None]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            d = loads_bounded(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(d, dict) or "record" in d:
            continue
        number, h, name, size = d.get("launch"), d.get("hash"), d.get("name"), d.get("bytes")
        if _count(number) and number <= MAX_LAUNCH_SCOPES and d.get("autotune") is not True and \
                isinstance(h, str) and h:
            out[number] = (h[:128], name if isinstance(name, str) else None, size if _count(size) else None)
    return out


def attach_profile(report: Report, hatchet: str | Path, launches: str | Path) -> tuple[Report, RunProfile]:
    """The report with each profiled kernel's KernelTime, and the run's RunProfile. Raises ArtifactError
    for a profile that cannot be read (parsers/proton.py)."""
    from irscope.parsers.proton import read_hatchet

    profile = read_hatchet(str(hatchet))
    numbered = numbered_launches(launches)
    tallies: dict[str, _Tally] = defaultdict(_Tally)
    others: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    gpu_ns = 0
    seen_launches = set()
    for k in profile.kernels:
        gpu_ns += k.ns
        recorded = numbered.get(k.launch) if k.launch is not None else None
        h = recorded[0] if recorded and recorded[1] in (None, k.name) else (k.kernel if k.launch is None else None)
        if not h:
            other = others[k.name]
            other[0] += k.count
            other[1] += k.ns
            continue
        tally = tallies[h]
        tally.launches += k.count
        tally.ns += k.ns
        if recorded:
            seen_launches.add(k.launch)
            if recorded[2] is not None:
                tally.bytes = (tally.bytes or 0) + recorded[2] * k.count
            if k.count == 1:
                tally.timed.append((k.launch, k.ns))
    kernels = []
    triton_ns = triton_launches = 0
    for kr in report.kernels:
        tally = tallies.get(kr.kernel.hash or "")
        if tally is None or not tally.launches:
            kernels.append(kr)
            continue
        timed = sorted(tally.timed)
        triton_ns += tally.ns
        triton_launches += tally.launches
        kernels.append(replace(kr, time=KernelTime(
            tally.launches, tally.ns, tally.ns / gpu_ns if gpu_ns else 0.0, timed[0][0] if timed else None,
            tuple(ns for _, ns in timed[:MAX_LAUNCH_TIMES]), tally.bytes)))
    # Triton kernels the scan did not analyze (a cache entry it could not read) stay Triton's, unnamed here
    analyzed = {kr.kernel.hash for kr in report.kernels}
    for h, tally in tallies.items():
        if h not in analyzed:
            triton_ns += tally.ns
            triton_launches += tally.launches
    ranked = sorted(others.items(), key=lambda item: (-item[1][1], item[0]))
    run = RunProfile(str(hatchet), "proton", profile.devices, gpu_ns, triton_ns, triton_launches,
                     tuple(OtherKernel(name, count, ns) for name, (count, ns) in ranked[:MAX_OTHERS]),
                     sum(1 for n in numbered if n not in seen_launches))
    return replace(report, kernels=tuple(kernels)), run


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 62

