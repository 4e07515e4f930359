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

from irscope.model.profile import MAX_LAUNCH_TIMES, KernelCounters, KernelTime, OtherKernel, RunProfile
from irscope.model.report import Report
from irscope.model.serde import loads_bounded

MAX_OTHERS = 50  # the other kernels kept by name, most time first; the rest are summed in the run's total


class _Tally:
    def __init__(self) -> None:
        self.launches = self.ns = 0
        self.bytes: int | None = None
        self.timed: list[tuple[int, int]] = []  # (launch number, ns) of single launches
        self.runs: list[tuple[tuple, int, int]] = []  # (scalar arguments, workgroups, count) of the numbered launches


def numbered_launches(path: str | Path, scoped: bool = True) -> dict[int, tuple]:
    """Launch number -> (kernel hash, name, bytes of its tensors, workgroups, scalar arguments) of the launches
    profiled one by one: not the autotuners' timing, and with `scoped` (Proton) not past MAX_LAUNCH_SCOPES;
    lines written without --profile have no number. The file is the script's: values are checked."""
    from irscope.pipeline.profile_session import MAX_LAUNCH_SCOPES

    limit = MAX_LAUNCH_SCOPES if scoped else 1 << 62
    out: dict[int, tuple] = {}
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
        if _count(number) and number <= limit and d.get("autotune") is not True and \
                isinstance(h, str) and h:
            out[number] = (h[:128], name if isinstance(name, str) else None, size if _count(size) else None,
                           _workgroups(d.get("grid")), _scalars(d.get("args")))
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
            tally.runs.append((recorded[4], recorded[3], k.count))
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
        flops, why, element = _flops(kr, tally)
        kernels.append(replace(kr, time=KernelTime(
            tally.launches, tally.ns, tally.ns / gpu_ns if gpu_ns else 0.0, timed[0][0] if timed else None,
            tuple(ns for _, ns in timed[:MAX_LAUNCH_TIMES]), tally.bytes, flops, why, element)))
    # Triton kernels the scan did not analyze (a cache entry it could not read) stay Triton's, unnamed here
    analyzed = {kr.kernel.hash for kr in report.kernels}
    for h, tally in tallies.items():
        if h not in analyzed:
            triton_ns += tally.ns
            triton_launches += tally.launches
    ranked = sorted(others.items(), key=lambda item: (-item[1][1], item[0]))
    run = RunProfile(str(hatchet), "proton", profile.devices, gpu_ns, triton_ns, triton_launches,
                     tuple(OtherKernel(name, count, ns) for name, (count, ns) in ranked[:MAX_OTHERS]),
                     sum(1 for n in numbered if n not in seen_launches), profile.dram_peak,
                     profile.arch, profile.units)
    return replace(report, kernels=tuple(kernels)), run


def _flops(kr, tally: _Tally) -> tuple[int | None, str | None, str | None]:
    """(FLOPs of the kernel's dots over its timed launches, why unknown, the dot's element type), from its TTIR
    (irscope/ir/dot_flops.py) and each launch's arguments and grid; (0, None, None) for a kernel with no dot."""
    from irscope.ir.dot_flops import program_dot_flops
    from irscope.ir.mlir import DOT_OPS
    from irscope.model.artifact_reader import read_artifact
    from irscope.pipeline.profile_session import MAX_LAUNCH_SCOPES
    from irscope.model.errors import ArtifactError, decode_text
    from irscope.parsers.mlir_parser import parse_mlir

    ttir = kr.kernel.artifact("ttir")
    if ttir is None:
        return None, "no TTIR to read the dots from", None
    try:
        module = parse_mlir(decode_text(read_artifact(ttir)[0], ttir.path), ttir.path)
    except (ArtifactError, OSError) as exc:
        return None, f"the TTIR could not be read: {exc}", None
    if next(module.ops_named(*DOT_OPS), None) is None:
        return 0, None, None
    # Launches past MAX_LAUNCH_SCOPES share their kernel's scope: timed, but with no arguments told apart
    counted = sum(count for _, _, count in tally.runs)
    if counted != tally.launches:
        return None, (f"{tally.launches - counted:,} of its launches came past the first {MAX_LAUNCH_SCOPES:,}, "
                      "whose time Proton sums under one scope: their arguments are not told apart"), None
    total, element, per_args = 0, None, {}
    for args, workgroups, count in tally.runs:
        if args is None or workgroups is None:
            return None, "a launch recorded no arguments or grid", element
        if args not in per_args:
            per_args[args] = program_dot_flops(module, dict(args), [name for name, _ in args])
        program = per_args[args]
        if program.flops is None:
            return None, program.why, element
        element = element or program.element
        total += program.flops * workgroups * count
    return total, None, element


def _workgroups(grid: object) -> int | None:
    if isinstance(grid, list) and len(grid) == 3 and all(_count(g) for g in grid):
        return grid[0] * grid[1] * grid[2]
    return None


def _scalars(args: object) -> tuple | None:
    """The launch's scalar arguments as ((name, int or None), ...): hashable, checked."""
    if not isinstance(args, list) or len(args) > 4096:
        return None
    out = []
    for item in args:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            return None
        value = item[1] if isinstance(item[1], int) and not isinstance(item[1], bool) and abs(item[1]) < 1 << 62 \
            else None
        out.append((item[0][:200], value))
    return tuple(out)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 62



# Nsight Compute's names for the resources that limit blocks per SM, and irscope's (irscope/occupancy/nvidia.py)
BLOCK_LIMITS = (("launch__occupancy_limit_registers", "registers"), ("launch__occupancy_limit_shared_mem", "shared"),
                ("launch__occupancy_limit_warps", "warps"), ("launch__occupancy_limit_blocks", "blocks"))


def attach_counters(report: Report, counters_csv: str | Path, launches: str | Path) -> Report:
    """Each kernel's KernelCounters from Nsight Compute's CSV. Its rows come in launch order; the recorded
    launches are walked alongside, a row taken for the next launch when it names that launch's kernel (the
    other rows are kernels irscope did not launch). Where irscope's occupancy and Nsight Compute's
    theoretical occupancy differ, the kernel gets a problem: that is an irscope bug."""
    from irscope.model.kernel import Problem
    from irscope.parsers.ncu import read_ncu_csv

    rows = read_ncu_csv(str(counters_csv))
    expected = sorted(numbered_launches(launches, scoped=False).items())
    by_hash: dict[str, list] = defaultdict(list)
    at = 0
    for row in rows:
        if at < len(expected) and row.name == (expected[at][1][1] or row.name):
            by_hash[expected[at][1][0]].append(row)
            at += 1
    kernels = []
    for kr in report.kernels:
        mine = by_hash.get(kr.kernel.hash or "")
        if not mine:
            kernels.append(kr)
            continue
        counters = _counters(mine, kr)
        problems = kr.problems
        if counters.agrees is False:
            problems += (Problem(str(counters_csv), f"irscope's occupancy, {counters.irscope_warps} warps/SM, is not "
                                 f"Nsight Compute's theoretical occupancy, {counters.theoretical_warps:g} warps/SM "
                                 f"(its blocks per SM by resource: {dict(counters.block_limits)}): an irscope bug",
                                 counters.first_line, "warning"),)
        kernels.append(replace(kr, counters=counters, problems=problems))
    return replace(report, kernels=tuple(kernels))


def _counters(rows: list, kr) -> KernelCounters:
    first = rows[0].values

    def summed(metric: str) -> int | None:
        values = [r.values[metric] for r in rows if metric in r.values]
        return round(sum(values)) if values else None

    achieved = [r.values["sm__warps_active.avg.pct_of_peak_sustained_active"] for r in rows
                if "sm__warps_active.avg.pct_of_peak_sustained_active" in r.values]
    theoretical = first.get("sm__maximum_warps_avg_per_active_cycle")
    occupancy = kr.occupancy.occupancy if kr.occupancy is not None else None
    mine = occupancy.active if occupancy is not None and occupancy.unit == "warps/SM" else None
    registers = first.get("launch__registers_per_thread")
    return KernelCounters(
        len(rows), rows[0].line, theoretical, first.get("sm__maximum_warps_per_active_cycle_pct"),
        sum(achieved) / len(achieved) if achieved else None,
        tuple((name, int(first[metric])) for metric, name in BLOCK_LIMITS if metric in first),
        int(registers) if registers is not None else None, summed("dram__bytes.sum"), summed("smsp__inst_executed.sum"),
        summed("gpu__time_duration.sum"), mine,
        None if mine is None or theoretical is None else mine == round(theoretical))
