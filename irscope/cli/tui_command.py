"""`irscope tui`: the Textual browser on a scan, a saved report, a running scan or a diff."""

from __future__ import annotations

import argparse

from irscope.cli.common import artifacts_problem, error, load_side, no_terminal, refused_paths, saved_report
from irscope.cli.exit_codes import EXIT_OK, EXIT_USAGE


def cmd_tui(args: argparse.Namespace) -> int:
    from irscope.pipeline.harvester import HarvestError
    from irscope.model.report import ReportError

    from irscope.cli.messages import no_default_cache

    refused = refused_paths(args.paths + list(args.diff or ())) or artifacts_problem(args) or no_terminal() or \
        (None if args.paths or args.diff else no_default_cache("tui"))
    if refused:
        error(refused)
        return EXIT_USAGE
    try:
        from irscope.tui.app import IrscopeApp
    except ImportError as exc:  # textual is a dependency; a broken install says what is missing
        error(f"the TUI needs textual: {exc}")
        return EXIT_USAGE
    report = diff = run = sides = None
    try:
        if args.diff:
            from irscope.diff.compare import diff_reports, load_policy

            before, after = (load_side(p, None, not args.no_cache, args.jobs, args.artifacts) for p in args.diff)
            diff, sides = diff_reports(before, after, policy=load_policy()), (before, after)
        else:
            report = saved_report(args.paths[0], args.artifacts) if len(args.paths) == 1 else None
            if report is None:
                from irscope.pipeline.analyze import ScanRun

                # Harvested and its workers started now; the table fills in as results arrive.
                run = ScanRun(args.paths or None, index=not args.no_cache, jobs=args.jobs)
                if not run.found.kernels:
                    error(f"no Triton kernels found under {', '.join(run.found.roots)}")
                    return EXIT_USAGE
    except (HarvestError, ReportError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if report is not None and not report.kernels:
        error(f"no Triton kernels found under {', '.join(report.roots)}")
        return EXIT_USAGE
    app = IrscopeApp(report=report, diff=diff, source_dirs=tuple(args.source), run=run, sides=sides)
    try:
        app.run()
    finally:
        if run is not None:
            run.close()
    return app.return_code or EXIT_OK  # 130 after Ctrl-C


def run_tui(report, diff, source_dirs: tuple[str, ...]) -> int:
    try:
        from irscope.tui.app import IrscopeApp
    except ImportError as exc:  # textual is a dependency; a broken install says what is missing
        error(f"the TUI needs textual: {exc}")
        return EXIT_USAGE
    app = IrscopeApp(report=report, diff=diff, source_dirs=source_dirs)
    app.run()
    return app.return_code or EXIT_OK  # 130 after Ctrl-C

