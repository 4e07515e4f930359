"""Cells that the console's kernel table and its family blocks (irscope/render/console.py, families.py)
both show: on their own so that neither of those modules imports the other."""

from __future__ import annotations

from irscope.model.kernel import AmdResources, Fact, KernelReport, NvidiaResources


def _v(fact: Fact | None) -> int | None:
    return None if fact is None else fact.value


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _registers(r: KernelReport) -> tuple[str, str, str, str]:
    """(registers, SGPRs, spills, scratch/local) cells for one kernel."""
    res = r.resources
    if isinstance(res, AmdResources):
        total, agpr = _v(res.vgpr_total), _v(res.agpr)
        arch = _v(res.vgpr_arch)
        regs = _num(total)
        if agpr and total is not None:
            regs += f" ({arch if arch is not None else total - agpr}v+{agpr}a)"
        spills = [s for s in (_v(res.vgpr_spill), _v(res.sgpr_spill)) if s is not None]
        spill = "-" if not spills else (
            "0" if not any(spills) else f"{_num(_v(res.vgpr_spill))}v {_num(_v(res.sgpr_spill))}s")
        return regs, _num(_v(res.sgpr)), spill, _num(_v(res.scratch_bytes))
    if isinstance(res, NvidiaResources):
        local = res.local_memory_bytes
        # Spills live in the stack frame; Triton reports n_spills = local memory bytes / 4.
        spill = "-" if local is None else f"{local // 4:,}"
        return _num(_v(res.registers)), "", spill, _num(local)
    return "-", "-", "-", "-"


def _instructions(r: KernelReport) -> str:
    """Instructions of the first assembly read (AMDGCN or PTX), and how many sit in loops."""
    if not r.mix:
        return "-"
    mix = r.mix[0]
    return f"{mix.total:,} ({mix.count(in_loop=True):,})"


def short_key(key: str) -> str:
    """The first 8 characters of a kernel's cache directory (its hash): enough to tell configs apart."""
    return key.rstrip("/").rsplit("/", 1)[-1][:8]


def duration(ns: float | None) -> str:
    """A GPU time to three figures: `950 ns`, `10.5 us`, `1.18 ms`, `2.31 s`."""
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            value = ns / scale
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{ns:.0f} ns"


def share(fraction: float | None) -> str:
    """`18%`, `0.4%`, `<0.1%` of the run's GPU time."""
    if fraction is None:
        return "-"
    percent = fraction * 100
    if percent >= 9.95:
        return f"{percent:.0f}%"
    return f"{percent:.1f}%" if percent >= 0.05 else ("0%" if fraction == 0 else "<0.1%")
