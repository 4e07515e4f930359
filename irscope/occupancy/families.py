"""Kernel families: the configs of one kernel that differ only by autotune parameters.

An autotuned kernel compiles once per config, so a cache holds one directory per config: 84 rows
that repeat the same findings. A family groups them by what the JIT specialized (name, target,
Triton version, the argument signature with its divisibility facts, and constexprs that are not
numbers, such as an activation's name) and keeps, per config, only the parameters that vary
between its configs: the constexprs recorded by a script run (BLOCK_M, GROUP_M, ...), else the
tile read from the TTGIR's dot, and the compile options (num_warps, num_stages, waves_per_eu,
matrix_instr_nonkdim, kpack, ...).

The sweep view answers what the seed tuning thread worked out by hand: which configs cannot
launch on the target (LDS or shared memory over what a CU/SM has, a workgroup over 1,024
threads), which spill, each config's occupancy and its limiter, and how many workgroups a launch
has against the slots of the device (CUs x workgroups per CU). Everything is derived from the
Report's values; nothing is read again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from irscope.model.findings import SEVERITIES, Finding
from irscope.model.report import Report
from irscope.model.serde import to_data
from irscope.model.launches import ConfigTiming
from irscope.model.kernel import AmdResources, KernelReport, NvidiaResources

# Compile options that tell configs apart, in the order the sweep view shows them.
OPTION_PARAMS = ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "num_ctas", "maxnreg")
MAX_THREADS = 1024  # a workgroup (block) of more threads is refused by both vendors' hardware


@dataclass(frozen=True)
class Fit:
    """Whether a config can launch on its target, and why not (one reason per resource over)."""

    launches: bool | None  # None: occupancy unknown (no resources were read)
    why: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """One config of a family: a kernel of the report and the sweep view's facts about it."""

    kernel: str  # the kernel's key in the report
    params: tuple[tuple[str, str], ...]  # the family's parameters, this config's values
    fit: Fit
    spills: int | None  # VGPR+SGPR spills (AMD), local-memory words (NVIDIA); None: unknown
    occupancy: str  # "2/8 waves/SIMD (vgpr)", "-" when unknown
    workgroups: int | None  # the largest recorded launch's workgroups (None: no launch recorded)
    slots: int | None  # workgroups the device holds at once: CUs x workgroups per CU
    findings: int
    worst: str | None  # the most serious finding's severity
    chosen: bool = False  # the config the autotuner ran
    ms: float | None = None  # the autotuner's median time of this config on the GPU (its first tuning key)

    def param(self, name: str) -> str:
        return next((v for n, v in self.params if n == name), "-")


@dataclass(frozen=True)
class SharedFinding:
    """One rule at one Python line, across a family's configs."""

    code: str
    slug: str
    severity: str
    python: str | None  # "file.py:42", or None when the artifact carries no Python line
    example: Finding  # the first config's finding (in the family's order)
    configs: tuple[int, ...]  # positions in Family.configs that have it


@dataclass(frozen=True)
class Family:
    name: str
    arch: str | None
    triton: str | None
    signature: str
    varying: tuple[str, ...]  # the parameters whose values differ between configs
    configs: tuple[Config, ...]  # most serious first
    findings: tuple[SharedFinding, ...]  # most serious first
    autotune: str | None  # "measured" (a real GPU), "not measured" (--target), None: no autotuner seen

    def spared(self, shared: SharedFinding) -> tuple[int, ...]:
        having = set(shared.configs)
        return tuple(i for i in range(len(self.configs)) if i not in having)


def families(reports: Iterable[KernelReport]) -> tuple[Family, ...]:
    """Every family of the given kernels, one-config families included, most serious first."""
    groups: dict[tuple, list[KernelReport]] = {}
    for r in reports:
        groups.setdefault(family_key(r), []).append(r)
    built = [_family(members) for members in groups.values()]
    return tuple(sorted(built, key=lambda f: (_config_rank(f.configs[0]), f.name, f.arch or "", f.triton or "")))


def family_key(r: KernelReport) -> tuple:
    k = r.kernel
    spec = r.specialization
    fixed = tuple((n, v) for n, v in constexprs(r) if not _is_number(v))
    return (k.name, k.target.arch if k.target else None, k.triton_version.value if k.triton_version else None,
            spec.signature if spec else None, fixed)


def constexprs(r: KernelReport) -> tuple[tuple[str, str], ...]:
    """The constexpr values a script run recorded for this compile (none for a cache scan)."""
    return r.config.constexprs if r.config is not None else ()


def parameters(r: KernelReport) -> tuple[tuple[str, str], ...]:
    """Every parameter that can tell this kernel's config from another's, by name."""
    out = [(n, v) for n, v in constexprs(r) if _is_number(v)]
    if not out and r.specialization and r.specialization.tile:
        out.append(("tile", r.specialization.tile))
    for name in OPTION_PARAMS:
        fact = getattr(r.kernel.options, name, None)
        if fact is not None:
            out.append((name, str(fact.value)))
    return tuple(out)


def fit(r: KernelReport) -> Fit:
    """Can this config launch? From the occupancy's resource limits and the workgroup size."""
    why = []
    k = r.kernel
    warps = k.options.num_warps.value if k.options.num_warps else None
    if warps is not None and k.target is not None and warps * k.target.warp_size > MAX_THREADS:
        why.append(f"{warps} warps x {k.target.warp_size} = {warps * k.target.warp_size:,} threads > "
                   f"{MAX_THREADS:,} a workgroup may have")
    occ = r.occupancy
    if occ is not None and not occ.occupancy.launchable:
        for limit in occ.occupancy.limits:
            if limit.groups == 0:
                reason = _over(r, limit.resource)
                if reason and reason not in why:
                    why.append(reason)
    if why:
        return Fit(False, tuple(why))
    return Fit(None if occ is None else True)


def _over(r: KernelReport, resource: str) -> str | None:
    """One resource that lets no workgroup fit, with its number and the hardware's."""
    occ = r.occupancy
    arch = r.kernel.target.arch if r.kernel.target else "?"
    if resource == "lds":
        from irscope.occupancy.amd import AMD_ARCHES

        lds, pool = occ.input("lds"), getattr(AMD_ARCHES.get(arch), "lds_pool", None)
        return f"LDS {lds:,} B > {pool:,} B a CU of {arch} has" if lds is not None and pool else "LDS over the CU's"
    if resource == "shared":
        from irscope.occupancy.nvidia import nvidia_arch

        shared = occ.input("shared")
        try:
            optin = nvidia_arch(arch).shared_optin
        except (KeyError, ValueError):
            optin = None
        if shared is not None and optin:
            return f"shared memory {shared:,} B > {optin:,} B a block of {arch} may have"
        return "shared memory over the SM's"
    if resource == "warps":
        return None  # said above, with the thread count
    relief = {"vgpr": "vgprs", "sgpr": "sgprs", "registers": "registers", "barriers": "barriers"}.get(resource)
    value = occ.input(relief) if relief else None
    return f"{resource} {value:,}: no workgroup fits" if value is not None else f"{resource}: no workgroup fits"


def spills(r: KernelReport) -> int | None:
    res = r.resources
    if isinstance(res, AmdResources):
        parts = [f.value for f in (res.vgpr_spill, res.sgpr_spill) if f is not None]
        return sum(parts) if parts else None
    if isinstance(res, NvidiaResources):
        local = res.local_memory_bytes
        return None if local is None else local // 4
    return None


def _slots(r: KernelReport) -> tuple[int | None, int | None]:
    """(workgroups of the largest recorded launch, CUs x workgroups per CU)."""
    if not r.launches:
        return None, None
    launch = max(r.launches, key=lambda launch: launch.workgroups)
    groups = r.occupancy.occupancy.groups if r.occupancy else None
    units = launch.compute_units
    return launch.workgroups, (units * groups if units and groups is not None else None)


def _config(r: KernelReport, names: Sequence[str], timings: Sequence[ConfigTiming] = ()) -> Config:
    params = dict(parameters(r))
    workgroups, slots = _slots(r)
    worst = min((f.severity for f in r.findings), key=SEVERITIES.index, default=None)
    return Config(r.kernel.key, tuple((n, params.get(n, "-")) for n in names), fit(r), spills(r),
                  str(r.occupancy.occupancy) if r.occupancy else "-", workgroups, slots, len(r.findings), worst,
                  chosen=bool(r.autotune), ms=_measured(r, timings))


def _measured(r: KernelReport, timings: Sequence[ConfigTiming]) -> float | None:
    """The autotuner's time of the config this kernel was compiled for: its kwargs among the kernel's
    constexprs, and the same num_warps and num_stages."""
    own = set(constexprs(r))
    options = r.kernel.options
    warps = options.num_warps.value if options.num_warps else None
    stages = options.num_stages.value if options.num_stages else None
    for t in timings:
        if set(t.constexprs) <= own and t.num_warps == warps and t.num_stages == stages:
            return t.ms[0] if t.ms else None
    return None


def _config_rank(c: Config) -> tuple:
    """Most serious first: cannot launch, spills, worst finding, then most findings."""
    return (c.fit.launches is not False, not c.spills, SEVERITIES.index(c.worst) if c.worst else len(SEVERITIES),
            -c.findings)


def _family(members: list[KernelReport]) -> Family:
    params = [dict(parameters(r)) for r in members]
    every = {n: None for p in params for n in p}
    varying = tuple(n for n in every if len({p.get(n) for p in params}) > 1)
    names = varying or tuple(every)
    measured = next((a.timings for r in members for a in r.autotune if a.measured and a.timings), ())
    built = [(_config(r, names, measured), p, r) for r, p in zip(members, params)]
    built.sort(key=lambda b: (_config_rank(b[0]), tuple(_sortable(b[1].get(n, "")) for n in names), b[2].kernel.key))
    ordered = [r for _, _, r in built]
    configs = tuple(c for c, _, _ in built)
    first = ordered[0].kernel
    seen = [a for r in members for a in r.autotune]
    autotune = None if not seen else ("measured" if any(a.measured for a in seen) else "not measured")
    return Family(first.name, first.target.arch if first.target else None,
                  first.triton_version.value if first.triton_version else None,
                  ordered[0].specialization.signature if ordered[0].specialization else "", varying, configs,
                  shared_findings(ordered), autotune)


def _sortable(value: str) -> tuple:
    """Configs of equal seriousness in the order of their parameters, numbers as numbers."""
    parts = value.replace("+", "").split("x")
    if all(p.isdigit() for p in parts):
        return (0, tuple(int(p) for p in parts), "")
    return (1, (), value)


def shared_findings(ordered: Sequence[KernelReport]) -> tuple[SharedFinding, ...]:
    """One entry per (rule, Python line) across the configs, most serious first, then most configs."""
    found: dict[tuple, list] = {}
    for i, r in enumerate(ordered):
        for f in r.findings:
            python = f"{f.python_file}:{f.python_line}" if f.python_line is not None else None
            entry = found.setdefault((f.code, python), [f, []])
            if SEVERITIES.index(f.severity) < SEVERITIES.index(entry[0].severity):
                entry[0] = f  # the most serious instance speaks for the line
            if not entry[1] or entry[1][-1] != i:
                entry[1].append(i)
    out = [SharedFinding(f.code, f.slug, f.severity, python, f, tuple(configs))
           for (_, python), (f, configs) in found.items()]
    return tuple(sorted(out, key=lambda s: (SEVERITIES.index(s.severity), -len(s.configs), s.code, s.python or "")))


def _is_number(value: str) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def derived(report: Report) -> dict:
    """What a written report adds to `Report.to_json`: its kernels' families (a reader recomputes them)."""
    return {"families": to_data(families(report.kernels))}


def report_json(report: Report, indent: int | None = None) -> str:
    """The report as `--json` and a kept run's report.json write it: every kernel, and the families."""
    return report.to_json(indent, derived(report))
