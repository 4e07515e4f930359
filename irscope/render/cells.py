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
