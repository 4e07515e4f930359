"""`irscope rules`, `irscope explain CODE` and `irscope baseline PATH`: the rules, one rule's page, and the
findings of a scan written as accepted."""

from __future__ import annotations

import argparse
import sys

from irscope.render.closed_stdout import write_stdout
from irscope.cli.common import error, refused_paths, rule_selection, status, stdout_console
from irscope.cli.exit_codes import EXIT_OK, EXIT_USAGE


def cmd_rules(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from irscope.model.safe_text import printable
    from irscope.engine.selection import load_rules

    table = Table(header_style="bold")
    for name in ("code", "slug", "severity", "reads", "what it finds"):
        table.add_column(name, no_wrap=name != "what it finds")
    for rule in load_rules():
        # Plain strings in a rich Table are markup: a plugin's rule is shown as written.
        table.add_row(*(Text(printable(str(cell))) for cell in (rule.code, rule.slug, rule.severity,
                                                               ", ".join(rule.stages), rule.summary)))
    stdout_console().print(table)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from irscope.engine.docs import page
    from irscope.engine.selection import find_rule

    rule = find_rule(args.rule)
    if rule is None:
        error(f"no rule {args.rule!r}; `irscope rules` lists them")
        return EXIT_USAGE
    write_stdout(page(rule))
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace) -> int:
    from irscope.api import load
    from irscope.engine.baseline import Baseline
    from irscope.pipeline.harvester import HarvestError
    from irscope.model.report import ReportError

    from irscope.cli.messages import no_default_cache

    refused = refused_paths(args.paths) or (None if args.paths else no_default_cache("baseline"))
    if refused:
        error(refused)
        return EXIT_USAGE
    from irscope.render.progress import scan_progress

    try:
        with scan_progress(args.quiet) as on_progress:
            report = load(args.paths or None, rules=rule_selection(args), index=not args.no_cache, jobs=args.jobs,
                          on_progress=on_progress)
    except (HarvestError, ReportError, ValueError) as exc:  # RuleConfigError is a ValueError
        error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        error(f"no Triton kernels found under {', '.join(report.roots) or ', '.join(args.paths)}")
        return EXIT_USAGE
    baseline = Baseline.of(report)
    write_stdout(baseline.to_json())
    print(f"irscope: {sum(baseline.counts.values())} finding(s) of {len(report.kernels)} kernel(s) in the baseline",
          file=sys.stderr)
    return status([report])

