"""`irscope scan`: a cache, a kernel directory, an artifact or a saved MLIR dump; or a script run under the
stand-in device (`irscope scan script.py --target gfx942`) and the kernels it compiled."""

from __future__ import annotations

import argparse
import os
import sys

from irscope.render.closed_stdout import write_stdout
from irscope.cli.common import error, findings_gate, no_terminal, refused_paths, rule_selection, status, stdout_console
from irscope.cli.exit_codes import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, worst
from irscope.cli.passes_command import cmd_passes
from irscope.cli.tui_command import run_tui
from irscope.occupancy.families import report_json


def cmd_scan(args: argparse.Namespace) -> int:
    from irscope.pipeline.harvester import HarvestError
    from irscope.pipeline.analyze import scan

    from irscope.engine.selection import RuleConfigError

    scripts = [p for p in args.paths if p.endswith(".py")]
    refused = _refusal(args, scripts)
    if refused:
        error(refused)
        return EXIT_USAGE
    if scripts:
        return _run_script(args, scripts[0])
    from irscope.parsers.mlir_dump import is_dump

    if len(args.paths) == 1 and os.path.isfile(args.paths[0]) and is_dump(args.paths[0]):
        args.dump, args.kernel, args.all = args.paths[0], None, False
        return cmd_passes(args)  # a saved MLIR_ENABLE_DUMP log: its pass timeline
    from irscope.cli.kept_views import Keeper, keepable
    from irscope.render.progress import scan_progress

    keeper = Keeper(args) if keepable(args) else None  # watches the cache from before the harvest
    try:
        with scan_progress(args.quiet) as on_progress:  # cleared before anything below is printed
            selection = rule_selection(args)
            report = scan(args.paths or None, sass=args.sass, rules=selection, index=not args.no_cache,
                          jobs=args.jobs, on_progress=on_progress)
    except (HarvestError, RuleConfigError) as exc:
        error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        where = ", ".join(report.roots)
        error(f"no Triton kernels found under {where}")
        return EXIT_USAGE

    if args.tui:
        if args.json and args.json != "-":
            from irscope.render.outputs import write_text

            write_text(args.json, report_json(report) + "\n")
        return run_tui(report, None, tuple(args.source))
    if keeper is None:
        _show_scan(report, args)
        return status([report], findings_gate(report, args.fail_on))
    with keeper:  # the output is recorded, and kept for the next identical scan if nothing changed meanwhile
        _show_scan(report, args)
        code = status([report], findings_gate(report, args.fail_on))
    keeper.keep(code, selection.rules())
    return code


def _refusal(args: argparse.Namespace, scripts: list[str]) -> str | None:
    """Why this scan is refused before anything is read or run, or None."""
    from irscope.cli.messages import no_default_cache

    refused = refused_paths(args.paths) or (no_terminal() if args.tui else None) or \
        (None if args.paths else no_default_cache("scan"))
    if refused:
        return refused
    if scripts and (len(args.paths) > 1 or not os.path.isfile(scripts[0])):
        return (f"give one script to run ({scripts[0]} {'is not a file' if not os.path.isfile(scripts[0]) else ''}"
                f"{'and nothing else' if len(args.paths) > 1 else ''})".replace("( ", "("))
    if (args.target or args.keep is not None or args.out or args.dump or args.script_args or args.profile) \
            and not scripts:
        return ("--target, --profile, --keep, --no-keep, --out and `-- args` go with a script: "
                "irscope scan script.py --target gfx942")
    if args.profile and args.target:
        return (f"--profile measures the kernels on this machine's GPU, and --target {args.target} runs nothing: "
                "drop one of them")
    if args.profile_plot and args.profile != "time":
        return "--profile-plot draws what --profile measures: irscope scan script.py --profile --profile-plot FILE.png"
    if args.profile_plot and not args.profile_plot.lower().endswith((".png", ".svg")):
        return f"--profile-plot {args.profile_plot}: give a .png or .svg file"
    if args.profile:
        from irscope.pipeline.profile_session import no_gpu_here

        absent = no_gpu_here()
        if absent:
            return f"--profile measures the kernels on a GPU, and {absent}: nothing was run"
    if args.profile == "counters":
        from irscope.pipeline.run_profile import ncu_path

        if ncu_path() is None:
            return ("--profile=counters runs the script under Nsight Compute, and its `ncu` is neither on PATH nor "
                    "in $CUDA_HOME/bin: nothing was run")
    from irscope.render.exports import check as check_exports

    # before a long scan: two outputs on stdout, no pyarrow, a FILE unwritable or inside a scanned path
    return check_exports(args, roots=_scanned_roots(args, scripts[0] if scripts else None))


def _show_scan(report, args: argparse.Namespace) -> None:
    """The scan's report: to each FILE asked for, else as tables on the console."""
    from irscope.render.console import render
    from irscope.render.exports import source_roots, write_scan
    from irscope.render.outputs import write_text

    to_stdout = write_scan(report, args)  # --sarif, --csv, --parquet, --markdown
    if args.json == "-":
        write_stdout(report_json(report) + "\n")
    elif args.json:
        write_text(args.json, report_json(report) + "\n")
    if args.json != "-" and not to_stdout:
        render(report, stdout_console(), args.wide, args.every_config, args.sweep, source_roots(args))


def _scanned_roots(args: argparse.Namespace, script: str | None) -> list[str]:
    """The paths this scan reads, where no output may be written: a script's run cache under --out."""
    from irscope.pipeline.harvester import default_cache_dir

    if script:
        return [os.path.join(args.out, "cache")] if args.out else []
    return list(args.paths) or [str(default_cache_dir())]


def _run_script(args: argparse.Namespace, script: str) -> int:
    from irscope.engine.selection import RuleConfigError
    from irscope.pipeline.runner import run_script
    from irscope.pipeline.stand_in.devices import DEVICES

    if args.target and args.target not in DEVICES:
        error(f"--target {args.target}: not one of {', '.join(DEVICES)}")
        return EXIT_USAGE
    from irscope.pipeline import kept_runs

    # --tui reads the run's artifacts (and its dump) while it is open: a run that would not be kept
    # (--no-keep, IRSCOPE_KEEP_RUNS=0) is kept until the browser closes.
    only_for_tui = args.tui and not args.out and args.keep is not True and (
        args.keep is False or kept_runs.keep_count() == 0)
    from functools import partial

    from irscope.render.progress import relay_child, scan_progress

    try:
        with scan_progress(args.quiet) as line:  # a spinner while the script runs, then the scan's counts
            relay = partial(relay_child, line=line, what=f"running {script}") if line else None
            result = run_script(script, tuple(args.script_args), args.target, True if only_for_tui else args.keep,
                                args.out, args.sass, rule_selection(args), dump=args.dump, on_progress=line,
                                run_child=relay, profile=args.profile)
    except RuleConfigError as exc:
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        error("interrupted: the script was stopped, nothing was analyzed, and its run was removed")
        return 130
    report = result.report
    if args.tui and report.kernels:
        try:
            return run_tui(report, None, tuple(args.source))
        finally:
            if only_for_tui:
                kept_runs.remove([result.kept.name])
    _show_run(report, args)
    _say_where_the_run_is(result)
    if args.profile_plot:
        from irscope.render.roofline import write_roofline

        why = write_roofline(report, args.profile_plot)
        if why:
            error(f"--profile-plot {args.profile_plot}: {why}")
            return EXIT_PARTIAL
        print(f"irscope: the roofline is in {args.profile_plot}", file=sys.stderr)
    return _run_status(args, script, result)


def _show_run(report, args: argparse.Namespace) -> None:
    """The run's report, as _show_scan shows a scan's, and with --dump each kernel's pass timeline."""
    from irscope.render.console import render
    from irscope.render.exports import source_roots, write_scan

    to_stdout = write_scan(report, args) if report.kernels else False  # --sarif, --csv, --parquet, --markdown
    if args.json:
        if args.json == "-":
            write_stdout(report_json(report) + "\n")
        else:
            from irscope.render.outputs import write_text

            write_text(args.json, report_json(report) + "\n")
    if args.json != "-" and not to_stdout and report.kernels:
        out = stdout_console()
        render(report, out, args.wide, args.every_config, args.sweep, source_roots(args))
        if args.dump:
            from irscope.render.passes import timeline_view

            for kr in report.kernels:
                if kr.passes is not None:
                    out.print()
                    out.print(timeline_view(kr.passes, width=None if args.wide else out.width), soft_wrap=True)


def _run_status(args: argparse.Namespace, script: str, result) -> int:
    """The exit status of a script run: 2 when it compiled no kernel, 3 when the script failed, else the scan's."""
    from irscope.pipeline.runner_child import NO_DRIVER

    report = result.report
    if result.exit_code == NO_DRIVER and not report.kernels:
        return EXIT_USAGE  # the child said why
    if report.run.reason:
        error(report.run.reason)
    if not report.kernels:
        hint = " (no GPU driver here? give --target ARCH)" if not args.target else ""
        error(f"{script} compiled no Triton kernel{hint}; it exited with {result.exit_code}")
        return EXIT_USAGE
    if result.exit_code != 0:
        error(f"{script} failed (exit {result.exit_code}) after compiling {len(report.kernels)} kernel(s); they are "
              "reported above" + (" (under --target outputs are not computed: a check of results fails)"
                                  if args.target and not report.run.reason else ""))
    return worst(EXIT_PARTIAL if result.exit_code != 0 else EXIT_OK,
                 status([report], findings_gate(report, args.fail_on)))


def _say_where_the_run_is(result) -> None:
    run = result.report.run
    if run.target and run.stand_in:
        asked = ", ".join(f"{a.question} x{a.count}" for a in run.stand_in[:6])
        more = f" and {len(run.stand_in) - 6} more" if len(run.stand_in) > 6 else ""
        print(f"irscope: the stand-in {run.device} ({run.target}) answered {asked}{more}; timings are not measured, "
              "so an autotuner keeps its first config", file=sys.stderr)
    if result.kept is not None:
        print(f"irscope: the run is kept in {result.kept} (report.json, cache/); `irscope runs` lists kept runs",
              file=sys.stderr)
    elif result.report.kernels:
        print("irscope: the artifact paths above were in the run's temporary cache, now removed (--no-keep)",
              file=sys.stderr)

