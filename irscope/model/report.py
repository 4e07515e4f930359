"""The Report: the saveable result of a scan, which every renderer reads.

Saved as JSON in a versioned schema (docs/json-schema.md). `schema_version` grows
by one when a field changes meaning or goes away; new fields may appear within a
version, so readers ignore keys they do not know.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from irscope.model.kernel import KernelReport, Problem, Skipped
from irscope.model.launches import ScriptRun
from irscope.model.serde import from_data, loads_bounded, to_data

SCHEMA = "irscope.report"
SCHEMA_VERSION = 2


MAX_DEPTH = 64  # how deep a saved report may nest JSON objects and arrays
_MISSING = object()


class ReportError(Exception):
    """A saved report that cannot be loaded: not JSON, another schema, or a newer version."""


@dataclass(frozen=True)
class Report:
    irscope_version: str
    created: str  # ISO 8601, UTC
    roots: tuple[str, ...]
    kernels: tuple[KernelReport, ...]
    problems: tuple[Problem, ...] = ()  # not tied to one kernel (an unreadable directory)
    skipped: tuple[Skipped, ...] = ()
    run: ScriptRun | None = None  # set by `irscope scan script.py`
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict, compare=False)

    def find(self, name: str = "*", arch: str | None = None) -> tuple[KernelReport, ...]:
        """The kernels whose name (or key) matches the glob `name`, built for `arch` if given."""
        from fnmatch import fnmatchcase

        return tuple(r for r in self.kernels
                     if (fnmatchcase(r.kernel.name, name) or fnmatchcase(r.kernel.key, name))
                     and (arch is None or (r.kernel.target is not None and r.kernel.target.arch == arch)))

    def to_json(self, indent: int | None = None, derived: dict | None = None) -> str:
        """The report as JSON; `derived`: keys computed from it that a reader ignores (the CLI adds the
        kernel families: irscope/occupancy/families.py `report_json`)."""
        from irscope.model.safe_text import json_safe

        data = to_data(self)
        data.update(derived or {})
        return json_safe(json.dumps(data, indent=indent, ensure_ascii=False))

    @classmethod
    def from_json(cls, text: str, source: str = "<report>", artifacts: str | None = None) -> "Report":
        """A saved report. Its artifacts are read only under its scan roots on this machine, or
        under `artifacts` (a copy of the cache it was scanned from), and only when their bytes
        match the digests it recorded (irscope/model/saved_artifacts.py)."""
        try:
            data = loads_bounded(text)
        except json.JSONDecodeError as exc:
            raise ReportError(f"{source}:{exc.lineno}: not a JSON report: {exc.msg}") from None
        except RecursionError:  # json's decoder recurses once per `[` or `{`
            raise ReportError(f"{source}: not a report: JSON nested too deep to read") from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise ReportError(f"{source}: not a JSON report: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ReportError(f"{source}: not an irscope report (no \"schema\": \"{SCHEMA}\")")
        wrong = _version_problem(data.get("schema_version", _MISSING))
        if wrong:
            raise ReportError(f"{source}: {wrong}")
        deepest = _depth(data)
        if deepest > MAX_DEPTH:  # readers and writers recurse per level; a real report nests about 10
            raise ReportError(f"{source}: malformed report: nested {deepest} levels deep (a report nests "
                              f"at most {MAX_DEPTH})")
        try:
            report = from_data(cls, data)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError) as exc:
            raise ReportError(f"{source}: malformed report: {exc}") from None
        from irscope.model.saved_artifacts import confine

        return confine(report, artifacts)

    def save(self, path: str | Path, derived: dict | None = None) -> None:
        Path(path).write_text(self.to_json(derived=derived) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path, artifacts: str | None = None) -> "Report":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReportError(f"{path}: cannot read report: {exc}") from None
        return cls.from_json(text, str(path), artifacts)

    # pandas is imported on first use only (irscope/model/frames.py; columns in docs/exports.md).
    def to_frame(self):
        """One row per kernel: the console table's facts as typed pandas columns."""
        from irscope.model.frames import kernels_frame

        return kernels_frame(self)

    def findings_frame(self):
        """One row per finding."""
        from irscope.model.frames import findings_frame

        return findings_frame(self)


def _version_problem(version: object) -> str | None:
    """What is wrong with a saved report's `schema_version`, or None: an integer from 1 (irscope
    still reads version 1) to SCHEMA_VERSION; JSON's `2.0`, `"2"`, `true` and `null` are not."""
    if version is _MISSING:
        return f"malformed report: no `schema_version` (an integer, 1 to {SCHEMA_VERSION})"
    if not isinstance(version, int) or isinstance(version, bool):
        shown = json.dumps(version)[:40]
        return f"malformed report: `schema_version` is {shown}, not an integer (1 to {SCHEMA_VERSION})"
    if version < 1:
        return f"malformed report: `schema_version` {version} is no version (1 to {SCHEMA_VERSION})"
    if version > SCHEMA_VERSION:
        return (f"report schema version {str(version)[:40]} is newer than this irscope reads "
                f"({SCHEMA_VERSION}); upgrade irscope")
    return None


def _depth(data: object) -> int:
    """How deep `data` nests lists and dicts, found without recursion (a hostile file nests deep)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in value if isinstance(v, (dict, list)))
    return deepest
