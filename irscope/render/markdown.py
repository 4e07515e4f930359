"""A Report or a DiffReport as Markdown for a pull-request comment (docs/exports.md).

Nothing from an artifact is interpreted: kernel names, keys and paths are code spans (no
emphasis, links, HTML, mentions or emoji inside them), and prose from the rules, which quotes
artifacts, is backslash-escaped with `<`, `>` and `&` as entities. Control characters and line
breaks are shown as `\\xNN` (irscope/model/safe_text.py), so no value can end a table row.
"""

from __future__ import annotations

import re
from collections import Counter

from irscope.diff.compare import DiffReport, PairDiff
from irscope.model.findings import SEVERITIES
from irscope.model.kernel import KernelReport
from irscope.model.frames import kernel_record
from irscope.render.occupancy import occupancy_cell
from irscope.model.safe_text import printable, shorten
from irscope.model.report import Report

# CommonMark can escape any ASCII punctuation; these start emphasis, code, links, images, table
# cells, math ($ on GitHub) and strikethrough. Text never starts a line, so `#`, `-`, `1.` cannot.
_ACTIVE = re.compile(r"([\\`*_\[\]!|~$])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_AUTOLINK = re.compile(r"(?i)(www)\.|:(?=//)")  # GFM links `www.x` and `scheme://x` by themselves
TOP_FINDINGS = 20
TABLE_ROWS = 50


def visible(text: object) -> str:
    """Control characters, tabs and line breaks as visible escapes."""
    return printable(str(text)).replace("\t", "\\x09").replace("\n", "\\x0a")


def escape(text: object) -> str:
    """Prose that renders as exactly these characters, with nothing interpreted."""
    out = _ACTIVE.sub(r"\\\1", visible(text))
    out = "".join(_ENTITIES.get(c, c) for c in out)
    return _AUTOLINK.sub(lambda m: f"{m.group(1)}\\." if m.group(1) else "\\:", out)


def code(text: object, table: bool = False) -> str:
    """A code span holding `text` literally (in a table, `|` is escaped as GFM requires)."""
    body = visible(text)
    if not body:
        return "-"
    if table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", body)), default=0) + 1)
    if body[0] in "` " or body[-1] in "` ":
        body = f" {body} "
    return f"{fence}{body}{fence}"


def _table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    align = ["---:" if i in right else "---" for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"] + \
        ["| " + " | ".join(row) + " |" for row in rows]


def _num(value) -> str:
    return "-" if value is None else f"{value:,}"


def _severity_counts(findings) -> str:
    counts = Counter(f.severity for f in findings)
    return ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s]) or "none"


def _occ_key(r: KernelReport) -> float:
    return r.occupancy.occupancy.fraction if r.occupancy else 2.0


def _kernel_order(r: KernelReport) -> tuple:
    """Worst first: errors, then the most serious findings, then the lowest occupancy."""
    sev = min((SEVERITIES.index(f.severity) for f in r.findings), default=len(SEVERITIES))
    return (r.ok, sev, -len(r.findings), _occ_key(r), r.kernel.name, r.kernel.key)


def scan_markdown(report: Report, top: int = TOP_FINDINGS, rows: int = TABLE_ROWS, roots=None) -> str:
    kernels = report.kernels
    findings = [f for r in kernels for f in r.findings]
    archs = Counter(r.kernel.target.arch if r.kernel.target else "?" for r in kernels)
    out = [f"## irscope: {len(kernels)} kernel{'s' * (len(kernels) != 1)}, {len(findings)} finding"
           f"{'s' * (len(findings) != 1)}", ""]
    out.append("- Kernels by arch: " + ", ".join(f"{code(a)} {n}" for a, n in sorted(archs.items())))
    out.append(f"- Findings: {_severity_counts(findings)}")
    problems = sum(len(r.problems) for r in kernels) + len(report.problems)
    if problems:
        out.append(f"- Problems: {problems} (artifacts that could not be read; the rest is analyzed in full)")
    for unit in sorted({r.occupancy.occupancy.unit for r in kernels if r.occupancy}):  # AMD, NVIDIA apart
        with_occ = [r for r in kernels if r.occupancy and r.occupancy.occupancy.unit == unit]
        worst = min(with_occ, key=lambda r: (_occ_key(r), r.kernel.name, r.kernel.key))
        o = worst.occupancy.occupancy
        same = sum(_occ_key(r) == o.fraction for r in with_occ) - 1
        out.append(f"- Worst occupancy ({escape(unit)}): {o.active}/{o.max_active} ({o.fraction:.0%}, limited by "
                   f"{escape(', '.join(o.limiters))}) in {code(shorten(worst.kernel.name))} {code(shorten(o.arch))}"
                   + (f" and {same} more" if same > 0 else ""))
    if findings:
        out += ["", "### Findings by rule", ""]
        by_rule: dict[str, list] = {}
        for r in kernels:
            for f in r.findings:
                by_rule.setdefault(f.code, []).append((r, f))
        table = []
        for c, items in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            f = items[0][1]
            table.append([code(c, True), code(f.slug, True), escape(f.severity), str(len(items)),
                          str(len({r.kernel.key for r, _ in items}))])
        out += _table(["rule", "slug", "severity", "findings", "kernels"], table, {3, 4})
    out += ["", "### Kernels", ""]
    ordered = sorted(kernels, key=_kernel_order)
    table = []
    for r in ordered[:rows]:
        rec = kernel_record(r)
        occ = occupancy_cell(r.occupancy)  # as the console: `2/8 lds`, no limiter at the maximum
        table.append([code(rec["name"], True), code(rec["arch"] or "?", True), escape(rec["triton"] or "?"),
                      f"{_num(rec['num_warps'])}/{_num(rec['num_stages'])}", _num(rec["shared_bytes"]),
                      _num(rec["registers"]), _num(rec["spills"]), escape(occ),
                      f"{rec['findings_error']}/{rec['findings_warning']}/{rec['findings_info']}",
                      escape(rec["status"])])
    out += _table(["kernel", "arch", "triton", "warps/stages", "LDS/smem B", "VGPR/regs", "spills", "occupancy",
                   "findings E/W/I", "status"], table, {3, 4, 5, 6})
    if len(ordered) > rows:
        out += ["", f"… and {len(ordered) - rows} more kernels (`irscope scan --csv FILE` lists them all)."]
    if findings:
        ranked = sorted(((r, f) for r in kernels for f in r.findings),
                        key=lambda rf: (SEVERITIES.index(rf[1].severity), rf[1].code, rf[0].kernel.name,
                                        rf[0].kernel.key, rf[1].line or 0))
        out += ["", f"### Top findings ({min(top, len(ranked))} of {len(ranked)})", ""]
        for i, (r, f) in enumerate(ranked[:top], 1):
            out.append(f"{i}. **{escape(f.severity)} {escape(f.code)}** {code(f.slug)} "
                       f"in {code(shorten(r.kernel.name))} "
                       f"{code(shorten(r.kernel.target.arch) if r.kernel.target else '?')} "
                       f"at {code(_where(f, roots))}: "
                       f"{escape(f.message)}  ")
            out.append(f"   Fix: {escape(f.fix)}")
    return "\n".join(out) + "\n"


def _where(f, roots=None) -> str:
    """The Python line when known, else the artifact file's name and line; a file's repository-relative
    path when `roots` (--source, source-roots: irscope/ir/source_roots.py) maps it."""
    from pathlib import PurePath

    def shown(path: str) -> str:
        return (roots.relative(path) if roots is not None and roots.configured else None) or PurePath(path).name

    if f.python_file and f.python_line is not None:
        return f"{shown(f.python_file)}:{f.python_line}"
    name = shown(f.path)
    return name if f.line is None else f"{name}:{f.line}"


def _name(p: PairDiff) -> str:
    suffix = f" {p.arch}"
    return p.label[:-len(suffix)] if p.label.endswith(suffix) else p.label


def _cell(p: PairDiff, *names: str) -> str:
    for name in names:
        c = p.change(name)
        if c is not None and (c.before is not None or c.after is not None):
            return _num(c.after) if not c.changed else f"{_num(c.before)} → {_num(c.after)}"
    return "-"


def diff_markdown(report: DiffReport, top: int = TOP_FINDINGS, rows: int = TABLE_ROWS) -> str:
    regressed = [p for p in report.pairs if p.regressions]
    improved = [p for p in report.pairs if p.improvements and not p.regressions]
    out = [f"## irscope diff: {len(report.pairs)} kernel pair{'s' * (len(report.pairs) != 1)}, "
           f"{len(regressed)} regressed, {len(improved)} improved", ""]
    if regressed:
        out += ["### Regressions", ""]
        for p in regressed:
            out.append(f"- {code(_name(p))} {code(p.arch)}: " + "; ".join(escape(r) for r in p.regressions))
        out.append("")
    if improved:
        out += ["### Improvements", ""]
        for p in improved:
            out.append(f"- {code(_name(p))} {code(p.arch)}: " + "; ".join(escape(r) for r in p.improvements))
        out.append("")
    out += ["### Pairs", ""]
    ordered = sorted(report.pairs, key=lambda p: (not p.regressions, not p.improvements, p.label, p.after_key))
    table = []
    for p in ordered[:rows]:
        occ = next((c for c in p.changes if c.group == "occupancy"), None)
        introduced = sum(f.status == "introduced" for f in p.findings)
        fixed = sum(f.status == "fixed" for f in p.findings)
        verdict = "**regression**" if p.regressions else "improvement" if p.improvements else "same"
        versions = p.after_version if p.before_version == p.after_version else \
            f"{p.before_version} → {p.after_version}"
        table.append([code(_name(p), True), code(p.arch, True), escape(versions or "?"),
                      _cell(p, "VGPRs", "registers"), _cell(p, "LDS/shared bytes"),
                      "-" if occ is None else _cell(p, occ.name), _cell(p, "instructions"),
                      f"+{introduced} -{fixed}", verdict])
    out += _table(["kernel", "arch", "triton", "VGPR/regs", "LDS/smem B", "occupancy", "instrs", "findings",
                   "verdict"], table, {3, 4, 5, 6})
    if len(ordered) > rows:
        out += ["", f"… and {len(ordered) - rows} more pairs (`irscope diff --json FILE` has them all)."]
    changes = [(p, f) for p in ordered for f in p.findings if f.status != "unchanged"]
    if changes:
        changes.sort(key=lambda pf: (pf[1].status != "introduced", SEVERITIES.index(pf[1].severity)))
        out += ["", f"### Findings introduced and fixed ({min(top, len(changes))} of {len(changes)})", ""]
        for p, f in changes[:top]:
            line = f" (line {f.python_line})" if f.python_line is not None else ""
            out.append(f"- {escape(f.status)} **{escape(f.severity)} {escape(f.code)}** {code(f.slug)} in "
                       f"{code(_name(p))} {code(p.arch)}{escape(line)}: {escape(f.message)}")
    for side, keys in (("before", report.only_before), ("after", report.only_after)):
        if keys:
            out += ["", f"Only {side} ({len(keys)}, no partner): " + ", ".join(code(k) for k in keys[:rows])
                    + (" …" if len(keys) > rows else "")]
    return "\n".join(out) + "\n"
