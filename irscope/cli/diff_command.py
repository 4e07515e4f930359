"""`irscope diff BEFORE AFTER`: two builds (caches, kernel directories or saved reports) paired and compared."""

from __future__ import annotations

import argparse

from irscope.render.closed_stdout import write_stdout
from irscope.cli.common import artifacts_problem, error, load_side, refused_paths, rule_selection, status, \
    stdout_console
from irscope.cli.exit_codes import EXIT_USAGE


def cmd_diff(args: argparse.Namespace) -> int:
    import json

    from irscope.diff.compare import diff_reports, load_policy
    from irscope.pipeline.harvester import HarvestError
    from irscope.render.diff import render
    from irscope.model.report import ReportError
    from irscope.engine.selection import RuleConfigError
    from irscope.model.serde import to_data
    from irscope.diff.stage import stage_diff

    from irscope.render.exports import check as check_exports

    problem = refused_paths([args.before, args.after]) or artifacts_problem(args) or \
        check_exports(args, ("json", "markdown"), roots=(args.before, args.after))
    if problem:
        error(problem)
        return EXIT_USAGE
    pairs = []
    for text in args.pair:
        a, sep, b = text.partition("=")
        if not sep or not a or not b:
            error(f"--pair {text!r}: expected A=B")
            return EXIT_USAGE
        pairs.append((a, b))
    try:
        selection = rule_selection(args)
        policy = load_policy()
        from irscope.render.progress import scan_progress

        shared: dict = {}  # a kernel both sides hold, unchanged, is analyzed once
        with scan_progress(args.quiet, "BEFORE ") as on_progress:
            before = load_side(args.before, selection, not args.no_cache, args.jobs, args.artifacts, on_progress,
                               shared)
        with scan_progress(args.quiet, "AFTER ") as on_progress:
            after = load_side(args.after, selection, not args.no_cache, args.jobs, args.artifacts, on_progress,
                              shared)
        report = diff_reports(before, after, tuple(pairs), policy)
    except (HarvestError, ReportError, RuleConfigError, ValueError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if not report.pairs and not report.only_before and not report.only_after:
        error(f"no Triton kernels found in {args.before} or {args.after}")
        return EXIT_USAGE
    stages = None
    if args.stage:
        # One lookup per side: two caches may hold the same key (a hash directory in both).
        old_side, new_side = ({k.kernel.key: k.kernel for k in side.kernels} for side in (before, after))
        stages = {}
        for p in report.pairs:
            a, b = old_side[p.before_key].artifact(args.stage), new_side[p.after_key].artifact(args.stage)
            stages[p.after_key] = stage_diff(a, b) if a and b else [f"(no .{args.stage} on both sides)"]
    if args.json:
        data = {"schema": "irscope.diff", "schema_version": 1, **to_data(report)}
        if stages is not None:
            data["stage_diffs"] = {"stage": args.stage, "lines": stages}
        text = json.dumps(data, indent=1) + "\n"
        if args.json == "-":
            write_stdout(text)
        else:
            from irscope.render.outputs import write_text

            write_text(args.json, text)
    from irscope.render.exports import write_diff

    to_stdout = write_diff(report, args)  # --markdown
    if args.json != "-" and not to_stdout:
        render(report, stdout_console(), stages, args.wide)
    tripped = args.fail_on == "regression" and report.regressed
    return status([before, after], "a kernel pair regressed (--fail-on regression)" if tripped else None)

