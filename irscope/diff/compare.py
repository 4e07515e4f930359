"""What a change did to the generated code: two builds' kernels paired and compared.

Each side is a Report (a scanned cache or a saved JSON report). Pairs come from
irscope/diff/match.py; this module compares what the scan already holds — resources,
occupancy, the instruction mix, findings, layout conversions — so a diff never re-parses an
artifact. Whether a pair regressed is decided by a documented, configurable policy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from irscope.diff.match import Pair, match
from irscope.model.findings import SEVERITIES
from irscope.model.kernel import AmdResources, Fact, KernelReport, NvidiaResources
from irscope.model.report import Report

# The regression checks `--fail-on regression` applies; `[tool.irscope] regression` picks.
REGRESSION_CHECKS = {
    "occupancy": "occupancy went down",
    "spills": "spills, scratch or local memory went up",
    "narrower-memory": "the narrowest global or LDS access of a kind got narrower",
    "new-findings": "a new finding at `regression-severity` (default warning) or above",
}
MEMORY_KINDS = ("global_load", "global_store", "shared_load", "shared_store")
_WIDTH = re.compile(r":(\d+)B")


class Metric(Enum):
    """A kernel resource a Change measures; the value is its label in every report."""

    LDS_BYTES = "LDS/shared bytes"
    VGPRS = "VGPRs"
    ARCH_VGPRS = "arch VGPRs"
    AGPRS = "AGPRs"
    SGPRS = "SGPRs"
    VGPR_SPILLS = "VGPR spills"
    SGPR_SPILLS = "SGPR spills"
    SCRATCH_BYTES = "scratch bytes"
    CODE_BYTES = "code bytes"
    REGISTERS = "registers"
    LOCAL_MEMORY_BYTES = "local memory bytes"
    STATIC_SHARED_BYTES = "static shared bytes"


# What the "spills" check watches, in the order its regressions are listed.
SPILL_METRICS = (Metric.VGPR_SPILLS, Metric.SGPR_SPILLS, Metric.SCRATCH_BYTES, Metric.LOCAL_MEMORY_BYTES)


@dataclass(frozen=True)
class Change:
    """One number on both sides. `better` says which way is good: "lower", "higher" or ""."""

    group: str  # "resources", "occupancy", "memory-width" (narrowest access, bytes), "mix"
    name: str
    before: int | None
    after: int | None
    better: str = ""
    # The resource measured, for the regression checks (None outside "resources"); the reports show `name`.
    metric: Metric | None = field(default=None, metadata={"saved": False})

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def verdict(self) -> str:
        if not self.changed:
            return "same"
        if self.before is None or self.after is None or not self.better:
            return "changed"
        up = self.after > self.before
        return "better" if up == (self.better == "higher") else "worse"


@dataclass(frozen=True)
class FindingChange:
    status: str  # "fixed", "introduced", "unchanged"
    code: str
    slug: str
    severity: str
    python_line: int | None
    message: str  # the after side's (the before side's for a fixed one)


@dataclass(frozen=True)
class LayoutChange:
    status: str  # "added" or "removed"
    what: str  # "conversion" or "round trip"
    description: str
    in_loop: bool
    python_line: int | None


@dataclass(frozen=True)
class PairDiff:
    label: str
    arch: str
    matched_by: str
    before_key: str
    after_key: str
    before_version: str | None
    after_version: str | None
    changes: tuple[Change, ...]
    findings: tuple[FindingChange, ...]
    layouts: tuple[LayoutChange, ...]
    regressions: tuple[str, ...] = ()
    improvements: tuple[str, ...] = ()

    def change(self, name: str) -> Change | None:
        return next((c for c in self.changes if c.name == name), None)


@dataclass(frozen=True)
class RegressionPolicy:
    checks: tuple[str, ...] = tuple(REGRESSION_CHECKS)
    severity: str = "warning"  # the least severe new finding that counts

    def __post_init__(self) -> None:
        unknown = set(self.checks) - set(REGRESSION_CHECKS)
        if unknown:
            raise ValueError(f"unknown regression check(s) {sorted(unknown)}; known: {sorted(REGRESSION_CHECKS)}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"regression-severity {self.severity!r} is not one of {SEVERITIES}")


def load_policy(start=None) -> RegressionPolicy:
    """`regression` and `regression-severity` from `[tool.irscope]` (defaults: every check, warning)."""
    from irscope.engine.selection import RuleConfigError, config_table

    found = config_table(start)
    if not found:
        return RegressionPolicy()
    table, source = found
    try:
        checks = table.get("regression", list(REGRESSION_CHECKS))
        if not isinstance(checks, list) or not all(isinstance(c, str) for c in checks):
            raise ValueError("regression must be a list of strings")
        return RegressionPolicy(tuple(checks), table.get("regression-severity", "warning"))
    except ValueError as exc:
        raise RuleConfigError(f"{source}: [tool.irscope] {exc}") from None


@dataclass(frozen=True)
class DiffReport:
    before: tuple[str, ...]
    after: tuple[str, ...]
    pairs: tuple[PairDiff, ...]
    only_before: tuple[str, ...]  # kernel keys with no partner
    only_after: tuple[str, ...]
    policy: RegressionPolicy = field(default_factory=RegressionPolicy)

    @property
    def regressed(self) -> bool:
        return any(p.regressions for p in self.pairs)


def diff_reports(before: Report, after: Report, pairs: tuple[tuple[str, str], ...] = (),
                 policy: RegressionPolicy | None = None) -> DiffReport:
    policy = policy or RegressionPolicy()
    matching = match(before.kernels, after.kernels, pairs)
    return DiffReport(
        before=before.roots, after=after.roots, pairs=tuple(diff_pair(p, policy) for p in matching.pairs),
        only_before=tuple(k.kernel.key for k in matching.only_before),
        only_after=tuple(k.kernel.key for k in matching.only_after), policy=policy)


def diff_pair(pair: Pair, policy: RegressionPolicy) -> PairDiff:
    a, b = pair.before, pair.after
    widths = tuple(Change("memory-width", kind, narrowest(a, kind), narrowest(b, kind), "higher")
                   for kind in MEMORY_KINDS)
    changes = _resources(a, b) + _occupancy(a, b) + widths + _mix(a, b)
    findings = _findings(a, b)
    layouts = _layouts(a, b)
    regressions, improvements = _judge(changes, findings, policy)
    arch = b.kernel.target.arch if b.kernel.target else "?"
    return PairDiff(pair.label, arch, pair.matched_by, a.kernel.key, b.kernel.key, _version(a), _version(b),
                    changes, findings, layouts, regressions, improvements)


def _version(kr: KernelReport) -> str | None:
    return kr.kernel.triton_version.value if kr.kernel.triton_version else None


def _v(fact: Fact | None) -> int | None:
    return None if fact is None else int(fact.value)


def _resources(a: KernelReport, b: KernelReport) -> tuple[Change, ...]:
    def pick(kr: KernelReport) -> dict[Metric, int | None]:
        res, opts = kr.resources, kr.kernel.options
        out: dict[Metric, int | None] = {Metric.LDS_BYTES: _v(opts.shared)}
        if isinstance(res, AmdResources):
            out.update({Metric.VGPRS: _v(res.vgpr_total), Metric.ARCH_VGPRS: _v(res.vgpr_arch),
                        Metric.AGPRS: _v(res.agpr), Metric.SGPRS: _v(res.sgpr), Metric.VGPR_SPILLS: _v(res.vgpr_spill),
                        Metric.SGPR_SPILLS: _v(res.sgpr_spill), Metric.SCRATCH_BYTES: _v(res.scratch_bytes),
                        Metric.CODE_BYTES: _v(res.code_bytes)})
        elif isinstance(res, NvidiaResources):
            out.update({Metric.REGISTERS: _v(res.registers), Metric.LOCAL_MEMORY_BYTES: res.local_memory_bytes,
                        Metric.STATIC_SHARED_BYTES: _v(res.static_shared)})
        return out

    left, right = pick(a), pick(b)
    return tuple(Change("resources", metric.value, left.get(metric), right.get(metric), "lower", metric)
                 for metric in dict.fromkeys([*left, *right]))


def _occupancy(a: KernelReport, b: KernelReport) -> tuple[Change, ...]:
    def active(kr: KernelReport) -> int | None:
        return kr.occupancy.occupancy.active if kr.occupancy else None

    unit = (b.occupancy or a.occupancy).occupancy.unit if (b.occupancy or a.occupancy) else ""
    return (Change("occupancy", f"occupancy ({unit})" if unit else "occupancy", active(a), active(b), "higher"),)


def _mix(a: KernelReport, b: KernelReport) -> tuple[Change, ...]:
    """Totals, loop share, and each (kind, detail) row of the memory, wait, barrier and matrix classes."""
    if not a.mix or not b.mix:
        return ()
    left, right = a.mix[0], b.mix[0]
    out = [Change("mix", "instructions", left.total, right.total, "lower"),
           Change("mix", "instructions in loops", left.count(in_loop=True), right.count(in_loop=True), "lower")]
    for kind in (*MEMORY_KINDS, "async_copy", "local_load", "local_store", "wait", "barrier", "matrix"):
        details = dict.fromkeys([*left.details(kind), *right.details(kind)])
        for detail in details:
            name = f"{kind} {detail}".strip()
            for in_loop in (None, True):
                before = left.count(kind, in_loop, detail)
                after = right.count(kind, in_loop, detail)
                if in_loop and not (before or after):
                    continue
                better = "lower" if kind in ("wait", "barrier", "local_load", "local_store") else ""
                out.append(Change("mix", name + (" (in loops)" if in_loop else ""), before, after, better))
    return tuple(out)


def narrowest(kr: KernelReport, kind: str) -> int | None:
    """The narrowest access of a memory kind, bytes per lane per access, from the mix details."""
    if not kr.mix:
        return None
    widths = [int(m.group(1)) for d in kr.mix[0].details(kind) if (m := _WIDTH.search(d))]
    return min(widths) if widths else None


def _findings(a: KernelReport, b: KernelReport) -> tuple[FindingChange, ...]:
    def key(f) -> tuple:
        return f.code, f.python_line

    left = {key(f): f for f in a.findings}
    right = {key(f): f for f in b.findings}
    out = []
    for k, f in right.items():
        out.append(FindingChange("unchanged" if k in left else "introduced", f.code, f.slug, f.severity,
                                 f.python_line, f.message))
    for k, f in left.items():
        if k not in right:
            out.append(FindingChange("fixed", f.code, f.slug, f.severity, f.python_line, f.message))
    order = {"introduced": 0, "fixed": 1, "unchanged": 2}
    return tuple(sorted(out, key=lambda c: (order[c.status], c.code, c.python_line or 0)))


def _layouts(a: KernelReport, b: KernelReport) -> tuple[LayoutChange, ...]:
    def items(kr: KernelReport) -> dict[tuple, tuple]:
        if kr.layouts is None:
            return {}
        out = {}
        # Keyed by what happens where, not by layout alias names (`#blocked1`), which each
        # build numbers its own way; GEMM operand staging is how a tiled dot works, not a change.
        for c in kr.layouts.conversions:
            if c.lowering == "noop":
                continue
            out[("conversion", c.lowering, c.in_loop, c.python_line)] = (
                f"convert_layout {c.source} -> {c.target} ({c.lowering})", c.in_loop, c.python_line)
        for t in kr.layouts.round_trips:
            if not t.feeds_dot:
                out[("round trip", t.in_loop, t.python_line)] = (
                    f"LDS round trip {t.stored} -> LDS -> {t.loaded}", t.in_loop, t.python_line)
        return out

    if a.layouts is None or b.layouts is None:
        return ()
    left, right = items(a), items(b)
    out = [LayoutChange("added", k[0], *right[k]) for k in right if k not in left]
    out += [LayoutChange("removed", k[0], *left[k]) for k in left if k not in right]
    return tuple(out)


def _moved(c: Change | None) -> bool:
    """Both sides are known and differ."""
    return c is not None and c.before is not None and c.after is not None and c.changed


def _judge(changes: tuple[Change, ...], findings: tuple[FindingChange, ...],
           policy: RegressionPolicy) -> tuple[tuple[str, ...], tuple[str, ...]]:
    worse, better = [], []
    by_metric = {c.metric: c for c in changes if c.metric is not None}
    if "occupancy" in policy.checks:
        occ = next((c for c in changes if c.group == "occupancy"), None)
        if _moved(occ):
            (worse if occ.after < occ.before else better).append(f"{occ.name} {occ.before} -> {occ.after}")
    if "spills" in policy.checks:
        for c in (by_metric.get(metric) for metric in SPILL_METRICS):
            if _moved(c):
                (worse if c.after > c.before else better).append(f"{c.name} {c.before} -> {c.after}")
    if "narrower-memory" in policy.checks:
        for c in changes:
            if c.group == "memory-width" and _moved(c):
                (worse if c.after < c.before else better).append(f"narrowest {c.name} {c.before} B -> {c.after} B")
    if "new-findings" in policy.checks:
        limit = SEVERITIES.index(policy.severity)
        for f in findings:
            if f.status == "introduced" and SEVERITIES.index(f.severity) <= limit:
                worse.append(f"new {f.code} {f.slug} ({f.severity})")
            elif f.status == "fixed" and SEVERITIES.index(f.severity) <= limit:
                better.append(f"fixed {f.code} {f.slug}")
    return tuple(worse), tuple(better)
