"""The base class of every rule, built-in or third-party.

A rule is a class with its metadata as class attributes and its documentation as the
docstring, under four headings (What it does / Why is this bad? / Example / How to fix it
in the kernel). A rule whose code, slug, stages or docs are malformed fails when its class
is defined, as sqlfluff's do, so a broken rule never runs silently.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, ClassVar, Iterable, Sequence

from irscope.model.findings import SEVERITIES, Evidence, Finding

if TYPE_CHECKING:
    from irscope.engine.context import KernelContext

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "How to fix it in the kernel")
CODE_PATTERN = re.compile(r"[A-Z]{2,5}\d{3}")
SLUG_PATTERN = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
KNOWN_STAGES = frozenset({"ttir", "ttgir", "llir", "amdgcn", "ptx", "sass", "cubin", "json", "resources",
                          "occupancy", "launch"})


class RuleDefinitionError(TypeError):
    pass


class Rule:
    """Subclass, set the class attributes, write the docstring, and implement `check`."""

    code: ClassVar[str]
    slug: ClassVar[str]
    summary: ClassVar[str]  # one line, for `irscope rules`
    severity: ClassVar[str] = "warning"  # the default; a finding may say otherwise
    # What the rule reads: artifact stages, or derived facts ("resources", "occupancy",
    # "launch"). The engine runs a rule only on kernels that have all of them.
    stages: ClassVar[tuple[str, ...]]
    backends: ClassVar[tuple[str, ...]] = ("hip", "cuda")
    # Compile options its findings' text quotes, which never decide whether it fires: kernels whose
    # files are the same bytes and whose options differ only in these may share a report, unless it
    # holds this rule's findings (irscope/pipeline/twins.py). tests/test_twins.py holds every rule to it.
    quotes_options: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or cls.__dict__.get("abstract", False):
            return
        where = f"rule {cls.__module__}.{cls.__qualname__}"
        for attr in ("code", "slug", "summary", "stages"):
            if not hasattr(cls, attr):
                raise RuleDefinitionError(f"{where}: no `{attr}`")
        if not CODE_PATTERN.fullmatch(cls.code):
            raise RuleDefinitionError(f"{where}: code {cls.code!r} is not like IRS101")
        if not SLUG_PATTERN.fullmatch(cls.slug):
            raise RuleDefinitionError(f"{where}: slug {cls.slug!r} is not kebab-case")
        if cls.severity not in SEVERITIES:
            raise RuleDefinitionError(f"{where}: severity {cls.severity!r} is not one of {SEVERITIES}")
        unknown = set(cls.stages) - KNOWN_STAGES
        if unknown or not cls.stages:
            raise RuleDefinitionError(f"{where}: stages {sorted(unknown) or '()'} unknown")
        doc = inspect.getdoc(cls) or ""
        missing = [h for h in DOC_HEADINGS if f"## {h}" not in doc]
        if missing:
            raise RuleDefinitionError(f"{where}: docstring lacks {', '.join('## ' + h for h in missing)}")

    @classmethod
    def documentation(cls) -> str:
        return inspect.getdoc(cls) or ""

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        raise NotImplementedError

    # -- helpers for rules ----------------------------------------------------------------
    def finding(self, ctx: KernelContext, *, message: str, fix: str, stage: str, path: str,
                lines: Sequence[int] = (), python: tuple[str, int] | None = None,
                evidence: dict[str, int] | None = None, severity: str | None = None) -> Finding:
        ordered = tuple(sorted(set(lines)))
        return Finding(
            code=self.code, slug=self.slug, severity=severity or self.severity, message=message, fix=fix,
            kernel=ctx.kernel.key, stage=stage, path=path, line=ordered[0] if ordered else None, lines=ordered,
            python_file=python[0] if python else None, python_line=python[1] if python else None,
            evidence=tuple(Evidence(k, int(v)) for k, v in (evidence or {}).items()),
        )
