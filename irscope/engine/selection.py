"""Finding, selecting and running rules.

Rules register through the `irscope.rules` entry-point group (irscope's own in its
pyproject.toml; a third-party package adds its own the same way), each entry naming one
Rule subclass. Selection works as in ruff: `select` and `ignore` take `ALL`, a code, a code
prefix (`IRS1`) or a slug; `per-kernel-ignores` maps kernel-name glob patterns to codes,
since an artifact cannot carry a suppression comment. `[tool.irscope]` in pyproject.toml
sets the defaults; the command line adds to them.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from irscope.model.findings import SEVERITIES, Finding
from irscope.model.kernel import Problem
from irscope.engine.rule import Rule
from irscope.engine.context import KernelContext
from irscope.model.project_config import CONFIG_KEYS, RuleConfigError, config_table  # noqa: F401 (public here)

ENTRY_POINT_GROUP = "irscope.rules"


@lru_cache(maxsize=1)
def load_rules() -> tuple[type[Rule], ...]:
    """Every registered rule class, ordered by code. Codes must be unique."""
    from importlib.metadata import entry_points

    found: dict[str, type[Rule]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, Rule)):
            raise TypeError(f"entry point {ep.name} = {ep.value} in group {ENTRY_POINT_GROUP} is not a Rule class")
        if cls.code in found and found[cls.code] is not cls:
            raise TypeError(f"rule code {cls.code} is registered twice: {found[cls.code].__module__} and "
                            f"{cls.__module__}")
        found[cls.code] = cls
    if not found:
        # irscope's own rules register here too: none means irscope's metadata is missing (the source
        # tree's parsers/ and rules/ import as irscope.* only once installed, so a checkout gets here
        # only half-installed). Said, rather than quietly analyzing with no rules.
        raise RuntimeError(f"no rule is registered in the {ENTRY_POINT_GROUP!r} entry-point group: irscope is not "
                           "installed whole (pip install -e . in its checkout)")
    return tuple(found[c] for c in sorted(found))


def find_rule(name: str) -> type[Rule] | None:
    """A rule by code (case-insensitive) or slug."""
    return next((r for r in load_rules() if name.upper() == r.code or name == r.slug), None)


@dataclass(frozen=True)
class RuleSelection:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    per_kernel_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (kernel-name glob, selectors)
    source: str = "defaults"  # where it came from, for messages
    # The rules to choose from: the registered ones unless given (a test of one rule class,
    # or a rule under development that is not registered yet).
    universe: tuple[type[Rule], ...] | None = None

    @classmethod
    def only(cls, *rules: type[Rule]) -> RuleSelection:
        return cls(universe=tuple(rules), source="RuleSelection.only")

    def candidates(self) -> tuple[type[Rule], ...]:
        return self.universe if self.universe is not None else load_rules()

    def __post_init__(self) -> None:
        for selector in (*self.select, *self.ignore, *(s for _, ss in self.per_kernel_ignores for s in ss)):
            if not any(_matches(selector, r) for r in self.candidates()):
                raise RuleConfigError(f"{self.source}: {selector!r} selects no rule (see `irscope rules`)")

    def enabled(self, rule: type[Rule] | Finding) -> bool:
        return _best(self.select, rule) > _best(self.ignore, rule)

    def suppressed(self, rule: type[Rule] | Finding, kernel_name: str) -> bool:
        return any(fnmatch.fnmatchcase(kernel_name, pattern) and any(_matches(s, rule) for s in selectors)
                   for pattern, selectors in self.per_kernel_ignores)

    def rules(self) -> tuple[type[Rule], ...]:
        return tuple(r for r in self.candidates() if self.enabled(r))

    def reports(self, finding: Finding, kernel_name: str) -> bool:
        """Whether this selection asks for a finding already made (a saved report's, or a filter in a
        test): matched by its code and slug, as its rule would be, even if that rule is not installed."""
        return self.enabled(finding) and not self.suppressed(finding, kernel_name)

    def extended(self, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> RuleSelection:
        """The command line's --select replaces the configured one; --ignore adds to it (ruff's way)."""
        return RuleSelection(tuple(select) or self.select, self.ignore + tuple(ignore), self.per_kernel_ignores,
                             self.source if not (select or ignore) else f"{self.source} + command line",
                             self.universe)


def _matches(selector: str, rule: type[Rule] | Finding) -> bool:  # a rule's code and slug, or a finding's
    return selector == "ALL" or rule.code.startswith(selector.upper()) or selector == rule.slug


def _best(selectors: Iterable[str], rule: type[Rule] | Finding) -> int:
    """How specific the most specific matching selector is (ruff: the longer prefix wins); -1 for none."""
    lengths = [0 if s == "ALL" else len(rule.code) if s == rule.slug else len(s)
               for s in selectors if _matches(s, rule)]
    return max(lengths, default=-1)


def load_config(start: Path | None = None) -> RuleSelection:
    found = config_table(start)
    return _selection_from(*found) if found else RuleSelection()


def _selection_from(table: dict, source: str) -> RuleSelection:
    def strings(value: object, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RuleConfigError(f"{source}: [tool.irscope] {key} must be a list of strings")
        return tuple(value)

    per_kernel = table.get("per-kernel-ignores", {})
    if not isinstance(per_kernel, dict):
        raise RuleConfigError(f"{source}: [tool.irscope] per-kernel-ignores must be a table")
    return RuleSelection(
        select=strings(table.get("select", ["ALL"]), "select"),
        ignore=strings(table.get("ignore", []), "ignore"),
        per_kernel_ignores=tuple((pattern, strings(codes, f"per-kernel-ignores.{pattern}"))
                                 for pattern, codes in per_kernel.items()),
        source=f"{source} [tool.irscope]",
    )


def run_rules(ctx: KernelContext, selection: RuleSelection | None = None) -> tuple[list[Finding], list[Problem]]:
    """Every selected rule that applies to this kernel; a rule that raises becomes a Problem."""
    selection = selection or RuleSelection()
    findings: list[Finding] = []
    problems: list[Problem] = []
    where = ctx.kernel.directory
    for cls in selection.rules():
        if ctx.backend not in cls.backends or not all(ctx.has(s) for s in cls.stages):
            continue
        if selection.suppressed(cls, ctx.kernel.name):
            continue
        try:
            findings.extend(cls().check(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not cost the other results
            problems.append(Problem(where, f"rule {cls.code} ({cls.slug}) failed: {type(exc).__name__}: {exc}",
                                    severity="warning"))
    findings.sort(key=finding_order)
    return findings, problems + ctx.problems


def finding_order(f: Finding) -> tuple:
    """A report's order of findings: the most severe first, then by rule, file and line (stable: a rule's
    findings at one line keep the order it gave them)."""
    return SEVERITIES.index(f.severity), f.code, f.path, f.line or 0
