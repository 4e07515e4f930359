"""A Report as SARIF 2.1.0 (docs/exports.md): one result per finding, the rules in the tool section.

Code scanning (GitHub's, VS Code's SARIF viewer) shows a result at its first location, so that
is the kernel's Python line when the artifact carried it, else the artifact line; the artifact
line is then a related location. Paths under the base directory (the current one by default),
or that `--source DIR` / `[tool.irscope] source-roots` map into the repository (irscope/ir/source_roots.py),
are written relative to it, with `uriBaseId` SRCROOT, so a viewer can map them to a checkout.
Text from artifacts is carried as JSON data, never interpreted.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import quote

from irscope.model.findings import SEVERITIES, Finding
from irscope.model.line_ranges import ranges_text
from irscope.model.kernel import KernelReport
from irscope.model.report import Report
from irscope.ir.source_roots import SourceRoots

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}  # irscope severity -> SARIF level
BASE_ID = "SRCROOT"


def sarif_log(report: Report, base: str | os.PathLike | None = None, roots: SourceRoots | None = None) -> dict:
    """The SARIF log of `report`; paths that `roots` maps, or under its base (`base`, default: the current
    directory), are relative to that base."""
    if roots is None:
        roots = SourceRoots(base=os.path.abspath(base if base is not None else os.getcwd()))
    root = roots
    rules = _rule_descriptors(report)
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = [_result(kr, f, index, root) for kr in report.kernels for f in _ordered(kr.findings)]
    notifications = [_notification(p, root) for kr in report.kernels for p in kr.problems]
    notifications += [_notification(p, root) for p in report.problems]
    from irscope.model.version import __version__

    run = {
        "tool": {"driver": {
            "name": "irscope", "version": __version__, "semanticVersion": __version__,
            "shortDescription": {"text": "Why is this Triton kernel slow at the codegen level?"},
            "rules": rules,
        }},
        "originalUriBaseIds": {BASE_ID: {"uri": Path(root.base).as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": not any(n["level"] == "error" for n in notifications),
                         "toolExecutionNotifications": notifications}],
        "results": results,
        "properties": {"irscopeReport": {"created": report.created, "roots": list(report.roots),
                                         "kernels": len(report.kernels), "schemaVersion": report.schema_version}},
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def sarif_text(report: Report, base: str | os.PathLike | None = None, roots: SourceRoots | None = None) -> str:
    from irscope.model.safe_text import json_safe

    return json_safe(json.dumps(sarif_log(report, base, roots), indent=1, ensure_ascii=False)) + "\n"


def _ordered(findings: tuple[Finding, ...]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.code, f.line or 0))


def _rule_descriptors(report: Report) -> list[dict]:
    """Every registered rule, then any code a saved report holds that no installed rule has."""
    from irscope.engine.docs import page
    from irscope.engine.selection import load_rules

    out, known = [], set()
    for rule in load_rules():
        known.add(rule.code)
        doc = rule.documentation()
        out.append({
            "id": rule.code, "name": rule.slug,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": _unwrap(_section(doc, "What it does")) or rule.summary},
            "help": {"text": doc, "markdown": page(rule)},
            "defaultConfiguration": {"level": LEVELS[rule.severity]},
            # No public URL yet for helpUri (an absolute URI); the page is in the repo and in `help`.
            "properties": {"docs": f"docs/rules/{rule.code}.md", "reads": list(rule.stages),
                           "backends": list(rule.backends), "tags": ["performance", "triton"]},
        })
    for kr in report.kernels:
        for f in kr.findings:
            if f.code not in known:
                known.add(f.code)
                out.append({"id": f.code, "name": f.slug, "shortDescription": {"text": f.slug},
                            "defaultConfiguration": {"level": LEVELS.get(f.severity, "warning")}})
    return out


def _section(doc: str, heading: str) -> str:
    """The text under `## heading` in a rule docstring."""
    _, found, rest = doc.partition(f"## {heading}")
    return rest.split("\n## ", 1)[0].strip() if found else ""


def _unwrap(text: str) -> str:
    """Docstring paragraphs as single lines, for viewers that show text as it is."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())


def _result(kr: KernelReport, f: Finding, index: dict[str, int], root: SourceRoots) -> dict:
    artifact = _location(f.path, f.line, root, f"{f.stage} artifact")
    if f.python_file and f.python_line is not None:
        locations = [_location(f.python_file, f.python_line, root, "kernel source")]
        related = [{"id": 1, **artifact}]
    else:
        locations, related = [artifact], []
    k = kr.kernel
    arch = k.target.arch if k.target else None
    result = {
        "ruleId": f.code, "ruleIndex": index[f.code], "level": LEVELS.get(f.severity, "warning"),
        "message": {"text": f"{f.message.rstrip('. ')}. Fix: {f.fix}"},
        "locations": locations,
        # Stable across runs and machines: which problem, in which kernel, at which source line.
        "partialFingerprints": {"irscopeFinding/v1": _fingerprint(f.code, k.name, arch, f.stage,
                                                                   f.python_file and Path(f.python_file).name,
                                                                   f.python_line if f.python_line is not None
                                                                   else f.line)},
        "properties": {"severity": f.severity, "slug": f.slug, "fix": f.fix, "kernel": k.key, "kernelName": k.name,
                       "arch": arch, "stage": f.stage, "artifactLines": ranges_text(f.lines),
                       "evidence": {e.name: e.value for e in f.evidence}},
    }
    if related:
        result["relatedLocations"] = related
    return result


def _location(path: str, line: int | None, root: SourceRoots, what: str) -> dict:
    physical: dict = {"artifactLocation": _artifact_location(path, root)}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical, "message": {"text": what}}


def _artifact_location(path: str, root: SourceRoots) -> dict:
    relative = root.relative(path)
    if relative is None:  # under no root: the path as the artifact gave it, never guessed
        return {"uri": "file://" + quote(_path_bytes(Path(os.path.abspath(path)).as_posix()))}
    return {"uri": quote(_path_bytes(relative)), "uriBaseId": BASE_ID}


def _path_bytes(path: str) -> bytes:
    """A path's bytes on disk: a name that is not UTF-8 holds them as lone surrogates (surrogateescape),
    percent-encoded as such; any other lone surrogate (a hostile saved report's path) as it is."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def _notification(problem, root: SourceRoots) -> dict:
    level = "error" if problem.severity == "error" else "warning"
    return {"level": level, "message": {"text": problem.message},
            "locations": [_location(problem.path, problem.line, root, "problem")]}


def _fingerprint(*parts: object) -> str:
    # surrogatepass: a lone surrogate in a name (escaped when shown) still fingerprints, as itself
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
