"""The pytest plugin: a test item per kernel and rule family over a Triton cache.

`pytest --irscope PATH` (or the ini option `irscope_paths`) scans PATH once per session and
adds `irscope::<kernel>::IRS1xx` items: one per kernel and rule family (the code's hundreds:
IRS1xx memory, IRS2xx waits and barriers, ...) that the selected rules check on that kernel. An
item fails on a finding of its family that the baseline (`--irscope-baseline FILE`) does not
accept, and shows it as `irscope scan` prints it. The options are declared in _irscope_pytest.py,
which registers IrscopePlugin only when a path is given, so other pytest runs never import this.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from irscope.api import load, selection
from irscope.engine.baseline import Baseline, BaselineError, Verdict, describe, judge
from irscope.model.findings import Finding
from irscope.pipeline.harvester import HarvestError
from irscope.model.kernel import AmdResources, KernelReport, NvidiaResources
from irscope.model.safe_text import printable, printable_message, printable_name, shorten
from irscope.model.report import Report, ReportError
from irscope.engine.rule import Rule
from irscope.engine.selection import RuleSelection

# What each of irscope's families checks; a third-party rule's family is named by its code alone.
FAMILIES = {"IRS1": "global and LDS memory", "IRS2": "waits and barriers", "IRS3": "layouts",
            "IRS4": "resources and occupancy", "IRS5": "matrix instructions", "IRS6": "launch"}
RULE_FAILED = re.compile(r"rule (\S+) \(")  # rule_engine.run_rules' Problem for a rule that raised


def family(code: str) -> str:
    """IRS102 -> IRS1xx."""
    return code[:-2] + "xx"


class IrscopeFailure(Exception):
    """An item's failure: its text is shown as is, with no traceback."""


@dataclass
class Run:
    """One session's scan, judged against the baseline; every item reads it."""

    paths: list[str]
    report: Report
    selection: RuleSelection
    baseline: Baseline | None
    verdict: Verdict


class IrscopePlugin:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.paths = self._paths()
        self.run: Run | None = None

    def _paths(self) -> list[str]:
        given = self.config.getoption("irscope_paths")
        if not given:
            return [str(p) for p in self.config.getini("irscope_paths")]  # absolute: relative to the ini file
        here = self.config.invocation_params.dir
        # As given, so failures show paths as `irscope scan` would; absolute if the cwd moved.
        # An empty one (`--irscope="$UNSET"`) stays empty, to be refused, not made the invocation directory.
        return [p if not p or Path.cwd() == here or os.path.isabs(p) else str(here / p) for p in given]

    def _baseline_path(self) -> str | None:
        given = self.config.getoption("irscope_baseline")
        if given:
            return given if Path.cwd() == self.config.invocation_params.dir else \
                str(self.config.invocation_params.dir / given)
        ini = self.config.getini("irscope_baseline")
        if not ini:
            return None
        base = self.config.inipath.parent if self.config.inipath else self.config.rootpath
        return str(base / ini)

    def scan(self) -> Run:
        """The session's one scan (raises on unusable input; the collector reports it)."""
        if self.run is None:
            option = self.config.getoption
            chosen = selection(option("irscope_select"), option("irscope_ignore"), self.config.rootpath)
            baseline_path = self._baseline_path()
            baseline = Baseline.load(baseline_path) if baseline_path else None
            report = load(self.paths, rules=chosen, index=not option("irscope_no_cache"))
            if not report.kernels:
                raise HarvestError(f"no Triton kernels found under {', '.join(report.roots or self.paths)}")
            codes = {r.code for r in chosen.rules()}
            self.run = Run(self.paths, report, chosen, baseline, judge(report, baseline, codes.__contains__))
        return self.run

    # -- hooks -------------------------------------------------------------------------------
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        baseline = self._baseline_path()
        return [printable(f"irscope: {', '.join(self.paths)}" + (f" (baseline {baseline})" if baseline else ""))]

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        return True if config.getoption("irscope_only") else None  # --irscope-only: no test files

    @pytest.hookimpl(tryfirst=True)  # before -k, -m and --deselect filter the items
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        root = IrscopeScan.from_parent(session, name="irscope", nodeid="irscope")  # not "::irscope": no file above it
        items.extend(session.genitems(root))  # fires the collect-report hooks as pytest's own collection does

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        run = self.run
        if run is None:
            return
        found = sum(len(r.findings) for r in run.report.kernels)
        accepted = sum(len(v) for v in run.verdict.accepted.values())
        line = f"irscope: {len(run.report.kernels)} kernel(s) under {', '.join(run.paths)}: {found} finding(s)"
        if run.baseline is not None:
            line += f", {accepted} accepted by the baseline {run.baseline.source}"
        terminalreporter.write_sep("-", "irscope")
        terminalreporter.write_line(printable(line))
        if run.verdict.unused:
            unused = sorted(run.verdict.unused.items())
            total = sum(n for _, n in unused)
            terminalreporter.write_line(
                f"irscope: {total} baseline entr{'y' if total == 1 else 'ies'} no longer occur (fixed, or the "
                "kernel was not compiled); `irscope baseline PATH > FILE` updates it:")
            for text in describe(unused[:20]):
                terminalreporter.write_line(f"  {printable(text)}")  # the baseline file's text
            if len(unused) > 20:
                terminalreporter.write_line(f"  ... and {len(unused) - 20} more")


def _plugin(node: pytest.Item | pytest.Collector) -> IrscopePlugin:
    plugin = node.config.pluginmanager.get_plugin("irscope-session")
    assert isinstance(plugin, IrscopePlugin)
    return plugin


class IrscopeScan(pytest.Collector):
    """`irscope`: the session's scan; one node per kernel under it."""

    def collect(self):
        try:
            run = _plugin(self).scan()
        except (HarvestError, ReportError, BaselineError, ValueError) as exc:  # RuleConfigError is a ValueError
            raise self.CollectError(printable(f"irscope: {exc}")) from None
        for r in sorted(run.report.kernels, key=lambda r: r.kernel.key):
            yield Kernel.from_parent(self, name=kernel_node_name(r), result=r)


def kernel_node_name(r: KernelReport) -> str:
    """`<key>/<name>@<arch>`: unique (the key) and readable (the name), for -k as well. Escaped as the
    console escapes a cache's text: pytest prints node IDs raw (FAILED lines, -v) and puts them in
    PYTEST_CURRENT_TEST, where a NUL or a lone surrogate would make it error."""
    k = r.kernel
    name = shorten(k.key) if k.key.endswith(k.name) else f"{shorten(k.key)}/{shorten(k.name)}"
    return printable(f"{name}@{shorten(k.target.arch) if k.target else '?'}")


class Kernel(pytest.Collector):
    def __init__(self, *, result: KernelReport, **kwargs) -> None:
        super().__init__(**kwargs)
        self.result = result

    def collect(self):
        r = self.result
        if not r.ok:  # an artifact could not be read: the checks of this kernel are incomplete
            yield RuleFamily.from_parent(self, name="problems", result=r, family_code=None)
        run = _plugin(self).scan()
        families = {family(rule.code) for rule in run.selection.rules() if applies(rule, r)}
        families |= {family(f.code) for f in r.findings}
        for name in sorted(families):
            # A saved report's finding codes are its text too: the node's name is escaped, the code kept.
            yield RuleFamily.from_parent(self, name=printable(name), result=r, family_code=name)


def applies(rule: type[Rule], r: KernelReport) -> bool:
    """Whether the engine ran this rule on this kernel (as rule_context.KernelContext.has decides)."""
    k = r.kernel
    if k.target is not None:
        backend = k.target.backend
    else:
        backend = {AmdResources: "hip", NvidiaResources: "cuda"}.get(type(r.resources))
    if backend not in rule.backends:
        return False
    derived = {"resources": r.resources is not None, "occupancy": r.occupancy is not None,
               "launch": bool(r.launches)}
    isas = {m.isa for m in r.mix}  # the assembly that was parsed
    return all(derived[s] if s in derived else s in isas if s in ("amdgcn", "ptx", "sass")
               else k.artifact(s) is not None for s in rule.stages)


class RuleFamily(pytest.Item):
    """`irscope::<kernel>::IRS1xx`: no finding of the family beyond the baseline, and no rule of it failed."""

    def __init__(self, *, result: KernelReport, family_code: str | None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.result = result
        self.family_code = family_code
        self.add_marker("irscope")

    def runtest(self) -> None:
        r = self.result
        if self.family_code is None:
            heading = f"{shorten(r.kernel.name)}  {shorten(r.kernel.key)}: could not be read in full"
            raise IrscopeFailure("\n".join([printable(heading)]
                                           + [f"  {p.severity}: {printable_message(str(p))}" for p in r.problems]))
        run = _plugin(self).scan()
        new = [f for f in run.verdict.new.get(r.kernel.key, ()) if family(f.code) == self.family_code]
        accepted = [f for f in run.verdict.accepted.get(r.kernel.key, ()) if family(f.code) == self.family_code]
        failed = [p for p in r.problems if (m := RULE_FAILED.match(p.message)) and family(m.group(1)) ==
                  self.family_code]
        if new or failed:
            raise IrscopeFailure(failure_text(r, self.family_code, new, accepted, failed, run.baseline))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, IrscopeFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # The failure's headline: `matmul_kernel@gfx942 IRS1xx` (the node id has the key too).
        k = self.result.kernel
        headline = f"{shorten(k.name)}@{shorten(k.target.arch) if k.target else '?'} {self.name}"
        return Path(printable(k.directory)), None, printable(headline)


def failure_text(r: KernelReport, family_code: str, new: list[Finding], accepted: list[Finding], failed: list,
                 baseline: Baseline | None) -> str:
    """The findings as `irscope scan` prints them (plain: no markup, no colour), then a summary."""
    from rich.text import Text

    from irscope.render.console import kernel_finding_lines

    parts = [Text("\n").join(kernel_finding_lines(r, new)).plain] if new else [printable_name(r.kernel.name)]
    parts += [f"  rule failed: {printable_message(p.message)}" for p in failed]
    what = FAMILIES.get(family_code[:-2])
    summary = f"{len(new)} new finding(s) of {family_code}" + (f" ({what})" if what else "")
    if baseline is not None:
        summary += f"; {len(accepted)} more accepted by the baseline {baseline.source}"
    if new:
        summary += f". `irscope explain {new[0].code}` says more"
    return "\n".join(parts) + "\n\n" + printable(summary)
