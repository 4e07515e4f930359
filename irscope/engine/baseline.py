"""A baseline: the findings a project has accepted, so CI fails only on new ones.

`irscope baseline PATH > irscope-baseline.json` writes it; the pytest plugin's
`--irscope-baseline FILE` reads it. A finding is keyed by what survives a recompile: the
kernel's name, its arch, the rule's code, and where in the kernel it is: the Python file's
name and line when the finding carries one, else the stage it reads (`json`, `amdgcn`, ...).
Not the hash directory (any change to the kernel, Triton or the options renames it), not the
artifact line (any change moves it), not the message (its numbers change with the code). A
key holds a count: two specializations of one kernel with the same finding accept two, and a
third is new. Which of several findings of one key are new: the later ones in kernel-key and
report order, so a run always picks the same ones.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from irscope.model.findings import Finding
from irscope.model.kernel import Kernel
from irscope.model.report import Report

SCHEMA = "irscope.baseline"
SCHEMA_VERSION = 1
KEY_FIELDS = ("kernel", "arch", "code", "where")

Key = tuple[str, str, str, str]


class BaselineError(ValueError):
    """A baseline file that cannot be read; the message names the file."""


def finding_key(kernel: Kernel, finding: Finding) -> Key:
    arch = kernel.target.arch if kernel.target else "?"
    if finding.python_line is not None and finding.python_file:
        # The file's name only: the absolute path differs between machines and checkouts.
        where = f"{finding.python_file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{finding.python_line}"
    else:
        where = finding.stage
    return (kernel.name, arch, finding.code, where)


@dataclass(frozen=True)
class Baseline:
    counts: dict[Key, int]
    messages: dict[Key, str] = field(default_factory=dict, compare=False)  # one per key, for people
    source: str = "<baseline>"

    @classmethod
    def of(cls, report: Report) -> Baseline:
        counts: Counter[Key] = Counter()
        messages: dict[Key, str] = {}
        for r in report.kernels:
            for f in r.findings:
                key = finding_key(r.kernel, f)
                counts[key] += 1
                messages.setdefault(key, f.message)
        return cls(dict(counts), messages)

    def to_json(self) -> str:
        """One entry a line, sorted, and no timestamp: a regenerated baseline diffs only where findings did."""
        from irscope.model.safe_text import json_safe

        entries = [json_safe(json.dumps({**dict(zip(KEY_FIELDS, key)), "count": self.counts[key],
                                         "message": self.messages.get(key, "")}, ensure_ascii=False))
                   for key in sorted(self.counts)]
        head = json.dumps({"schema": SCHEMA, "schema_version": SCHEMA_VERSION})[:-1]
        body = ",\n  ".join(entries)
        return f'{head}, "findings": [\n  {body}\n]}}\n' if entries else f'{head}, "findings": []}}\n'

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror or exc}") from None
        except ValueError as exc:  # the decoder's message gives the line and column (or the byte's position)
            raise BaselineError(f"{path}: not a JSON baseline: {exc}") from None
        except RecursionError:  # `[[[[...`: json's decoder recurses once a level
            raise BaselineError(f"{path}: not a JSON baseline: nested too deeply to read (a baseline is a flat "
                                "list of entries)") from None
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise BaselineError(f"{path}: not an irscope baseline (no \"schema\": \"{SCHEMA}\"); "
                                "write one with `irscope baseline PATH > FILE`")
        if not isinstance(data.get("schema_version"), int) or data["schema_version"] > SCHEMA_VERSION:
            raise BaselineError(f"{path}: baseline schema version {data.get('schema_version')!r} is newer than "
                                f"this irscope reads ({SCHEMA_VERSION}); upgrade irscope")
        counts: Counter[Key] = Counter()
        messages: dict[Key, str] = {}
        findings = data.get("findings", [])
        if not isinstance(findings, list):
            raise BaselineError(f"{path}: \"findings\" is not a list of entries")
        for i, entry in enumerate(findings):
            try:
                key: Key = tuple(str(entry[k]) for k in KEY_FIELDS)  # type: ignore[assignment]
                counts[key] += int(entry.get("count", 1))
            except (TypeError, KeyError, ValueError, AttributeError, OverflowError, RecursionError):  # 1e999, [[[
                raise BaselineError(f"{path}: findings[{i}] is not an entry with "
                                    f"{', '.join(KEY_FIELDS)} and count") from None
            messages.setdefault(key, str(entry.get("message", "")))
        return cls(dict(counts), messages, str(path))


@dataclass(frozen=True)
class Verdict:
    """A report judged against a baseline: per kernel key, the findings it accepts and the new ones."""

    accepted: dict[str, tuple[Finding, ...]]
    new: dict[str, tuple[Finding, ...]]
    unused: dict[Key, int]  # accepted entries no finding used: fixed, or the kernel was not compiled


def judge(report: Report, baseline: Baseline | None, wanted: Callable[[str], bool] = lambda code: True) -> Verdict:
    """Spend the baseline's counts on the report's findings, kernels in key order. `wanted(code)`:
    whether the run checks that rule at all (an entry of an unchecked rule is not `unused`)."""
    left = Counter(baseline.counts if baseline else {})
    accepted: dict[str, list[Finding]] = {}
    new: dict[str, list[Finding]] = {}
    for r in sorted(report.kernels, key=lambda r: r.kernel.key):
        for f in r.findings:
            key = finding_key(r.kernel, f)
            if left[key] > 0:
                left[key] -= 1
                accepted.setdefault(r.kernel.key, []).append(f)
            else:
                new.setdefault(r.kernel.key, []).append(f)
    unused = {k: n for k, n in left.items() if n > 0 and wanted(k[2])}
    return Verdict({k: tuple(v) for k, v in accepted.items()}, {k: tuple(v) for k, v in new.items()}, unused)


def describe(keys: Iterable[tuple[Key, int]]) -> list[str]:
    """`matmul_kernel gfx942 IRS102 gemm.py:59 (x2)` per entry."""
    return [" ".join(key) + (f" (x{n})" if n > 1 else "") for key, n in keys]
