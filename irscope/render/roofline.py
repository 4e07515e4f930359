"""`irscope scan script.py --profile --profile-plot FILE.png|svg`: the run's Triton kernels on a roofline.

Each kernel with a dot is a point: its arithmetic intensity (its dots' FLOPs over its tensors' bytes, both
from the report: irscope/ir/dot_flops.py, KernelTime.bytes) against its achieved TFLOP/s. The roof is the
device's: its DRAM bandwidth (from the profile's device facts) times the intensity, up to the dense matrix
peak of the dots' element type (irscope/model/device_peaks.py, with the vendor's source). A renderer: it
reads the Report only. matplotlib is imported here alone (`pip install 'irscope[plot]'`).
"""

from __future__ import annotations

from pathlib import Path

from irscope.model.device_peaks import matrix_peak
from irscope.model.report import Report


def write_roofline(report: Report, path: str) -> str | None:
    """Write the plot to `path` (its suffix picks PNG or SVG); why it could not be drawn, or None."""
    profile = report.run.profile if report.run is not None else None
    if profile is None:
        return "no profile to plot (the run measured nothing)"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "the roofline plot needs matplotlib: pip install 'irscope[plot]'"
    points = [(r.kernel.name, r.time) for r in report.kernels
              if r.time is not None and r.time.flops and r.time.bytes and r.time.tflops]
    device = profile.device
    figure, axes = plt.subplots(figsize=(8, 5.5))
    xs = [t.flops / t.bytes for _, t in points] or [1.0]
    low, high = min(xs + [0.1]) / 4, max(xs + [1000.0]) * 4
    if profile.dram_peak:
        elements = sorted({t.element for _, t in points if t.element})
        peaks = [(e, matrix_peak(device, e)) for e in elements] if device else []
        top = max((p for _, p in peaks if p), default=None)
        ceiling = top if top else max([t.tflops for _, t in points] + [1.0]) * 2
        bandwidth = profile.dram_peak / 1e12  # TFLOP/s per FLOP/byte
        axes.plot([low, ceiling / bandwidth, high], [low * bandwidth, ceiling, ceiling], color="black", linewidth=1,
                  label=f"roof: {profile.dram_peak / 1e9:,.0f} GB/s DRAM" + (f", {top:,.0f} TFLOP/s" if top else ""))
        for element, peak in peaks:
            if peak and peak != top:
                axes.axhline(peak, color="gray", linestyle=":", linewidth=1,
                             label=f"{element} peak {peak:,.0f} TFLOP/s")
    for name, t in points:
        axes.scatter(t.flops / t.bytes, t.tflops, zorder=3)
        axes.annotate(f"{name} ({t.total_ns / 1e3:,.1f} us)", (t.flops / t.bytes, t.tflops), fontsize=8,
                      xytext=(4, 4), textcoords="offset points")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_xlabel("arithmetic intensity (dot FLOPs per byte of the kernel's tensors)")
    axes.set_ylabel("achieved TFLOP/s")
    axes.set_title(f"{Path(report.run.script).name}: Triton kernels on "
                   f"{device.name if device else ', '.join(profile.devices) or 'the GPU'}")
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return None
