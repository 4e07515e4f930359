"""The console's view of a profiled run (`irscope scan script.py --profile`): where the GPU time went,
before the kernels that hold it. Every figure is a sum of kernel nodes of the profile file it names."""

from __future__ import annotations

from rich.text import Text

from irscope.model.report import Report
from irscope.model.safe_text import printable, printable_name
from irscope.render.cells import duration, share
from irscope.render.table import middle_ellipsis, wrapped

OTHERS_SHOWN = 3


def profile_lines(report: Report, width: int | None) -> list[Text]:
    run = report.run
    profile = run.profile if run else None
    if profile is None:
        if not run.unprofiled:
            return []  # --profile=counters: Nsight Compute's table says what was measured
        return [Text("Profile: nothing measured: ", style="bold yellow") + Text(printable(run.unprofiled)), Text()]
    device = f" on {printable(', '.join(profile.devices))}" if profile.devices else ""
    lines = wrapped(f"GPU time{device} (Proton: {printable(profile.path)}):", width, indent="", style="bold")
    total = profile.gpu_ns
    analyzed = sum(1 for r in report.kernels if r.time and r.time.launches)
    lines += wrapped(f"{duration(total)} in all (autotuners' timing of their configs not profiled); Triton's kernels "
                     f"{duration(profile.triton_ns)} ({share(profile.triton_ns / total if total else None)}) in "
                     f"{_count(profile.triton_launches, 'launch')} of {_count(analyzed, 'kernel')} below",
                     width, indent="  ")
    if profile.others:
        count = sum(o.launches for o in profile.others)
        lines += wrapped(f"other kernels (not Triton's: cuBLAS, torch's own, ...) {duration(profile.others_ns)} "
                         f"({share(profile.others_ns / total if total else None)}) in {_count(count, 'launch')}; "
                         "the most:", width, indent="  ")
        room = (width or 120) - 30
        for other in profile.others[:OTHERS_SHOWN]:
            name = middle_ellipsis(printable_name(other.name), max(room, 24))
            lines.append(Text(f"    {duration(other.total_ns):>9} {share(other.total_ns / total if total else None):>5}"
                              f"  {name} x{other.launches:,}", style="dim"))
    if profile.dram_peak:
        lines += wrapped(f"the device's DRAM bandwidth: {profile.dram_peak / 1e9:,.0f} GB/s (2 x its memory clock x "
                         "bus width, from the profile's device facts); `GB/s (peak)` below: each kernel's tensors' "
                         "bytes over its time, the least it moves", width, indent="  ", style="dim")
    device = profile.device
    if device is not None:
        peaks = ", ".join(f"{kind} {tflops:,.0f}" for kind, tflops in device.tflops)
        lines += wrapped(f"`TFLOP/s (peak)`: each kernel's dot FLOPs over its time, against the {device.name}'s dense "
                         f"matrix peak for its dots' type (TFLOP/s: {peaks}; {device.source})", width, indent="  ",
                         style="dim")
    if profile.untimed:
        lines.extend(wrapped(f"{profile.untimed:,} recorded launches have no time in the profile (the script "
                             "ended before the GPU finished them?)", width, indent="  ", style="yellow"))
    lines.append(Text())
    return lines


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "es" if noun.endswith("h") else "s")
