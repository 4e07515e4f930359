"""The `irscope` command line.

Exit codes (irscope/cli/exit_codes.py; README "Exit codes"), the first that applies of 2, 3, 1, 0:
  2  unusable input: a missing, empty or unreadable path, nothing that is a Triton kernel, a bad argument, an
     output FILE that cannot be written or lies inside a scanned path, `tui` without a terminal,
     an internal error (one line; --debug shows the traceback)
  3  partial results: a kernel could not be analyzed in full (an error-severity problem on a
     kernel or on the run), or the script of `scan script.py` failed; what was read is reported
  1  a gate tripped: `scan --fail-on SEVERITY` found a finding at SEVERITY or above,
     `diff --fail-on regression` found a pair that regressed
  0  clean
A gate's verdict on partial results is not the whole truth, hence 3 over 1. Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import os
import sys

from irscope.cli.closed_stdout import write_stdout
from irscope.cli.exit_codes import EXIT_GATE, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, worst


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:  # `irscope scan script.py [options] -- script args`
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.script_args = script_args
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    # Worker processes inherit these; restored at the end, so that main() called in-process (the
    # tests, a tool) leaves the environment as it found it.
    saved = {name: os.environ.get(name) for name in ("IRSCOPE_DEBUG", "IRSCOPE_MAX_FILE_SIZE")}
    if args.debug:
        os.environ["IRSCOPE_DEBUG"] = "1"
    if getattr(args, "max_file_size", None) is not None:
        os.environ["IRSCOPE_MAX_FILE_SIZE"] = str(args.max_file_size)  # read where artifacts are read (workers too)
    try:
        return _run_command(args)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_command(args: argparse.Namespace) -> int:
    """The command, with its failures as exit codes: 130 on Ctrl-C, 2 for an unwritable output or a bug."""
    from irscope.render.outputs import OutputError
    from irscope.pipeline.analyze import debug_enabled, paused_gc

    # A command holds one report and exits: collecting cycles while it renders a 1,000-kernel
    # report walked every result again and again. Analysis turns collection back on
    # (pipeline._collecting, the workers' initializer).
    try:
        with paused_gc():
            return args.func(args)
    except KeyboardInterrupt:
        return 130
    except OutputError as exc:  # a FILE the user named could not be written (a full disk, /dev/full)
        _error(str(exc))
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a bug in irscope: one line, the traceback under --debug
        if debug_enabled():
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (this is irscope's bug; --debug shows the traceback)")
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    from irscope.cli.parser import build_parser

    return build_parser({"scan": _cmd_scan, "diff": _cmd_diff, "tui": _cmd_tui, "baseline": _cmd_baseline,
                         "passes": _cmd_passes, "rules": _cmd_rules, "explain": _cmd_explain,
                         "occupancy": _cmd_occupancy, "runs": _cmd_runs, "cache": _cmd_cache})


def _selection(args: argparse.Namespace):
    """[tool.irscope] from the nearest pyproject.toml, then the command line's flags."""
    from irscope.engine.selection import load_config

    def split(values: list[str]) -> list[str]:
        return [v.strip() for value in values for v in value.split(",") if v.strip()]

    return load_config().extended(split(args.select), split(args.ignore))


def _refused_paths(paths) -> str | None:
    """Why these paths are not scanned before anything is read: an empty one is the working directory
    to os.walk (`irscope scan "$UNSET"`), never what was meant."""
    from irscope.pipeline.harvester import EMPTY_PATH

    return EMPTY_PATH if any(p == "" for p in paths) else None


def _no_terminal() -> str | None:
    """Why the TUI cannot start here: without a terminal on stdin and stdout it would spin."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return None
    return "the TUI needs a terminal (stdin and stdout are not one here); `irscope scan` prints a table"


def _scanned_roots(args: argparse.Namespace, script: str | None) -> list[str]:
    """The paths this scan reads, where no output may be written: a script's run cache under --out."""
    from irscope.pipeline.harvester import default_cache_dir

    if script:
        return [os.path.join(args.out, "cache")] if args.out else []
    return list(args.paths) or [str(default_cache_dir())]


def _cmd_scan(args: argparse.Namespace) -> int:
    from irscope.pipeline.harvester import HarvestError
    from irscope.render.outputs import write_text
    from irscope.render.console import render
    from irscope.pipeline.analyze import scan

    from irscope.engine.selection import RuleConfigError

    from irscope.cli.messages import no_default_cache

    refused = _refused_paths(args.paths) or (_no_terminal() if args.tui else None) or \
        (None if args.paths else no_default_cache("scan"))
    if refused:
        _error(refused)
        return EXIT_USAGE
    scripts = [p for p in args.paths if p.endswith(".py")]
    if scripts and (len(args.paths) > 1 or not os.path.isfile(scripts[0])):
        _error(f"give one script to run ({scripts[0]} {'is not a file' if not os.path.isfile(scripts[0]) else ''}"
               f"{'and nothing else' if len(args.paths) > 1 else ''})".replace("( ", "("))
        return EXIT_USAGE
    if (args.target or args.keep is not None or args.out or args.dump or args.script_args) and not scripts:
        _error("--target, --keep, --no-keep, --out and `-- args` go with a script: "
               "irscope scan script.py --target gfx942")
        return EXIT_USAGE
    from irscope.render.exports import check as check_exports

    # before a long scan: two outputs on stdout, no pyarrow, a FILE unwritable or inside a scanned path
    problem = check_exports(args, roots=_scanned_roots(args, scripts[0] if scripts else None))
    if problem:
        _error(problem)
        return EXIT_USAGE
    if scripts:
        return _run_script(args, scripts[0])
    from irscope.parsers.mlir_dump import is_dump

    if len(args.paths) == 1 and os.path.isfile(args.paths[0]) and is_dump(args.paths[0]):
        args.dump, args.kernel, args.all = args.paths[0], None, False
        return _cmd_passes(args)  # a saved MLIR_ENABLE_DUMP log: its pass timeline
    from irscope.render.progress import scan_progress

    try:
        with scan_progress(args.quiet) as on_progress:  # cleared before anything below is printed
            report = scan(args.paths or None, sass=args.sass, rules=_selection(args), index=not args.no_cache,
                          jobs=args.jobs, on_progress=on_progress)
    except (HarvestError, RuleConfigError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        where = ", ".join(report.roots)
        _error(f"no Triton kernels found under {where}")
        return EXIT_USAGE

    if args.tui:
        if args.json and args.json != "-":
            write_text(args.json, report.to_json() + "\n")
        return _run_tui(report, None, tuple(args.source))
    from irscope.render.exports import source_roots, write_scan

    to_stdout = write_scan(report, args)  # --sarif, --csv, --parquet, --markdown
    if args.json == "-":
        write_stdout(report.to_json() + "\n")
    elif args.json:
        write_text(args.json, report.to_json() + "\n")
    if args.json != "-" and not to_stdout:
        render(report, _console(), args.wide, args.every_config, args.sweep, source_roots(args))
    return _status([report], _findings_gate(report, args.fail_on))


def _findings_gate(report, fail_on: str | None) -> str | None:
    """What tripped `scan --fail-on SEVERITY`, or None."""
    from irscope.cli.exit_codes import findings_at_or_above

    count = findings_at_or_above(report, fail_on) if fail_on else 0
    return f"{count} finding(s) at {fail_on} severity or above (--fail-on {fail_on})" if count else None


def _status(reports, gate: str | None = None) -> int:
    """The exit status of an analysis: 3 when a kernel could not be analyzed in full, else 1 when
    `gate` (what tripped the user's --fail-on) is given, else 0. Both are said on stderr."""
    from irscope.cli.exit_codes import unanalyzed

    lost = [where for report in reports for where in unanalyzed(report)]
    if gate:
        _error(gate)
    if lost:
        some = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        _error(f"partial results: {len(lost)} kernel(s) or path(s) could not be analyzed in full ({some}); "
               "the report lists their problems")
    return worst(EXIT_PARTIAL if lost else EXIT_OK, EXIT_GATE if gate else EXIT_OK)


def _what_if(args: argparse.Namespace) -> dict[str, int]:
    given = {name: getattr(args, name) for name in ("vgprs", "sgprs", "warps", "registers", "static_shared",
                                                   "barriers") if getattr(args, name) is not None}
    lds = args.lds if args.lds is not None else args.shared
    if lds is not None:
        given["lds"] = given["shared"] = lds  # one flag for both vendors' name of the same thing
    return given


def _cmd_occupancy(args: argparse.Namespace) -> int:
    import fnmatch
    import json

    from irscope.pipeline.harvester import HarvestError
    from irscope.occupancy.calculator import kernel_occupancy, occupancy_for
    from irscope.pipeline.analyze import scan
    from irscope.render.occupancy import occupancy_table
    from irscope.model.safe_text import shorten
    from irscope.model.serde import to_data

    what_if = _what_if(args)
    if _refused_paths(args.paths):
        _error(_refused_paths(args.paths))
        return EXIT_USAGE
    results = []
    lost = False  # a chosen kernel could not be analyzed in full
    from irscope.occupancy import what_if as numbers

    if not args.paths:
        if not args.arch:
            _error("give a PATH to harvested kernels, or --arch and the numbers for a what-if")
            return EXIT_USAGE
        problem = numbers.refused(args.arch, numbers.given(args)) or numbers.missing(args.arch, numbers.given(args))
        if problem:
            _error(problem)
            return EXIT_USAGE
        values = dict(what_if)
        values.setdefault("lds", 0)
        values.setdefault("shared", values["lds"])
        try:
            results.append((f"what-if on {args.arch}", None, occupancy_for(args.arch, _for_vendor(args.arch, values))))
        except ValueError as exc:
            _error(str(exc))
            return EXIT_USAGE
    else:
        try:
            report = scan(args.paths)
        except HarvestError as exc:
            _error(str(exc))
            return EXIT_USAGE
        chosen = [r for r in report.kernels if not args.kernel
                  or fnmatch.fnmatch(r.kernel.name, args.kernel) or fnmatch.fnmatch(r.kernel.key, args.kernel)]
        if not chosen:
            _error(f"no kernel{' matching ' + args.kernel if args.kernel else ''} under {', '.join(report.roots)}")
            return EXIT_USAGE
        lost = any(p.severity == "error" for r in chosen for p in r.problems) or \
            any(p.severity == "error" for p in report.problems)
        for r in chosen:
            # --arch with PATH: the kernel's own numbers placed on ARCH, or refused (irscope/occupancy/what_if.py)
            moved = numbers.retarget(r.kernel, r.resources, args.arch) if args.arch else (r.kernel, r.resources)
            if isinstance(moved, str):
                _error(moved)
                return EXIT_USAGE
            kernel, resources = moved
            title = f"{shorten(r.kernel.name)}  {shorten(str(kernel.target or '?'))}  {shorten(r.kernel.key)}"
            arch = kernel.target.arch if kernel.target else ""
            problem = numbers.beyond_hardware(arch, numbers.given(args))
            if problem:
                _error(f"{problem} ({r.kernel.key})")
                return EXIT_USAGE
            occ, problems = kernel_occupancy(kernel, resources, _for_vendor(arch, what_if)) \
                if what_if or kernel is not r.kernel else (r.occupancy, [])
            if occ is not None and r.kernel.target:
                occ = numbers.retarget_note(occ, r.kernel.target.arch, arch)
            if occ is None:
                reasons = problems or [p for p in r.problems if p.message.startswith("occupancy")]
                _error(f"{r.kernel.key}: " + ("; ".join(p.message for p in reasons) or "occupancy unknown"))
                lost = True
                continue
            results.append((title, r.kernel, occ))
    if args.json:
        rows = [{"kernel": k.name if k else None, "key": k.key if k else None, **to_data(o)} for _, k, o in results]
        write_stdout(json.dumps(rows, indent=1) + "\n")
    else:
        out = _console()
        for title, _, occ in results:
            out.print(occupancy_table(title, occ, None if args.wide else out.width))
            out.print()
    return EXIT_USAGE if not results else (EXIT_PARTIAL if lost else EXIT_OK)


def _load_side(path: str, selection, index: bool = True, jobs: int | None = None, artifacts: str | None = None,
               on_progress=None):
    """A saved report (`*.json` holding a Report), or a scan of a directory or artifact."""
    from irscope.pipeline.analyze import scan

    saved = _saved_report(path, artifacts)
    return saved if saved is not None else scan(path, rules=selection, index=index, jobs=jobs,
                                                on_progress=on_progress)


def _saved_report(path: str, artifacts: str | None = None):
    """The Report saved at `path` (a `*.json` whose schema says so), else None: anything else is
    scanned, and the harvest refuses a named `.json` that is not Triton's metadata either.
    `artifacts` (--artifacts DIR): where its artifacts are read (irscope/model/saved_artifacts.py)."""
    from irscope.model.json_input import REPORT, json_kind
    from irscope.model.report import Report

    if path.endswith(".json") and json_kind(path)[0] == REPORT:
        return Report.load(path, artifacts)
    return None


def _artifacts_problem(args: argparse.Namespace) -> str | None:
    """--artifacts DIR must be a directory: a mistyped one would make every stage unavailable."""
    if args.artifacts is not None and not os.path.isdir(args.artifacts):
        return f"--artifacts {args.artifacts}: not a directory (give a copy of the cache the report scanned)"
    return None


def _cmd_diff(args: argparse.Namespace) -> int:
    import json

    from irscope.diff.compare import diff_reports, load_policy
    from irscope.pipeline.harvester import HarvestError
    from irscope.render.diff import render
    from irscope.model.report import ReportError
    from irscope.engine.selection import RuleConfigError
    from irscope.model.serde import to_data
    from irscope.diff.stage import stage_diff

    from irscope.render.exports import check as check_exports

    problem = _refused_paths([args.before, args.after]) or _artifacts_problem(args) or \
        check_exports(args, ("json", "markdown"), roots=(args.before, args.after))
    if problem:
        _error(problem)
        return EXIT_USAGE
    pairs = []
    for text in args.pair:
        a, sep, b = text.partition("=")
        if not sep or not a or not b:
            _error(f"--pair {text!r}: expected A=B")
            return EXIT_USAGE
        pairs.append((a, b))
    try:
        selection = _selection(args)
        policy = load_policy()
        from irscope.render.progress import scan_progress

        with scan_progress(args.quiet, "BEFORE ") as on_progress:
            before = _load_side(args.before, selection, not args.no_cache, args.jobs, args.artifacts, on_progress)
        with scan_progress(args.quiet, "AFTER ") as on_progress:
            after = _load_side(args.after, selection, not args.no_cache, args.jobs, args.artifacts, on_progress)
        report = diff_reports(before, after, tuple(pairs), policy)
    except (HarvestError, ReportError, RuleConfigError, ValueError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if not report.pairs and not report.only_before and not report.only_after:
        _error(f"no Triton kernels found in {args.before} or {args.after}")
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
        render(report, _console(), stages, args.wide)
    tripped = args.fail_on == "regression" and report.regressed
    return _status([before, after], "a kernel pair regressed (--fail-on regression)" if tripped else None)


def _cmd_tui(args: argparse.Namespace) -> int:
    from irscope.pipeline.harvester import HarvestError
    from irscope.model.report import ReportError

    from irscope.cli.messages import no_default_cache

    refused = _refused_paths(args.paths + list(args.diff or ())) or _artifacts_problem(args) or _no_terminal() or \
        (None if args.paths or args.diff else no_default_cache("tui"))
    if refused:
        _error(refused)
        return EXIT_USAGE
    try:
        from irscope.tui.app import IrscopeApp
    except ImportError as exc:  # textual is a dependency; a broken install says what is missing
        _error(f"the TUI needs textual: {exc}")
        return EXIT_USAGE
    report = diff = run = sides = None
    try:
        if args.diff:
            from irscope.diff.compare import diff_reports, load_policy

            before, after = (_load_side(p, None, not args.no_cache, args.jobs, args.artifacts) for p in args.diff)
            diff, sides = diff_reports(before, after, policy=load_policy()), (before, after)
        else:
            report = _saved_report(args.paths[0], args.artifacts) if len(args.paths) == 1 else None
            if report is None:
                from irscope.pipeline.analyze import ScanRun

                # Harvested and its workers started now; the table fills in as results arrive.
                run = ScanRun(args.paths or None, index=not args.no_cache, jobs=args.jobs)
                if not run.found.kernels:
                    _error(f"no Triton kernels found under {', '.join(run.found.roots)}")
                    return EXIT_USAGE
    except (HarvestError, ReportError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if report is not None and not report.kernels:
        _error(f"no Triton kernels found under {', '.join(report.roots)}")
        return EXIT_USAGE
    app = IrscopeApp(report=report, diff=diff, source_dirs=tuple(args.source), run=run, sides=sides)
    try:
        app.run()
    finally:
        if run is not None:
            run.close()
    return app.return_code or EXIT_OK  # 130 after Ctrl-C


def _run_tui(report, diff, source_dirs: tuple[str, ...]) -> int:
    try:
        from irscope.tui.app import IrscopeApp
    except ImportError as exc:  # textual is a dependency; a broken install says what is missing
        _error(f"the TUI needs textual: {exc}")
        return EXIT_USAGE
    app = IrscopeApp(report=report, diff=diff, source_dirs=source_dirs)
    app.run()
    return app.return_code or EXIT_OK  # 130 after Ctrl-C


def _cmd_baseline(args: argparse.Namespace) -> int:
    from irscope.api import load
    from irscope.engine.baseline import Baseline
    from irscope.pipeline.harvester import HarvestError
    from irscope.model.report import ReportError

    from irscope.cli.messages import no_default_cache

    refused = _refused_paths(args.paths) or (None if args.paths else no_default_cache("baseline"))
    if refused:
        _error(refused)
        return EXIT_USAGE
    from irscope.render.progress import scan_progress

    try:
        with scan_progress(args.quiet) as on_progress:
            report = load(args.paths or None, rules=_selection(args), index=not args.no_cache, jobs=args.jobs,
                          on_progress=on_progress)
    except (HarvestError, ReportError, ValueError) as exc:  # RuleConfigError is a ValueError
        _error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        _error(f"no Triton kernels found under {', '.join(report.roots) or ', '.join(args.paths)}")
        return EXIT_USAGE
    baseline = Baseline.of(report)
    write_stdout(baseline.to_json())
    print(f"irscope: {sum(baseline.counts.values())} finding(s) of {len(report.kernels)} kernel(s) in the baseline",
          file=sys.stderr)
    return _status([report])


def _cmd_passes(args: argparse.Namespace) -> int:
    import fnmatch
    import json

    from rich.text import Text

    from irscope.parsers.errors import ArtifactError
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines
    from irscope.render.console import print_text
    from irscope.render.passes import timeline_view
    from irscope.model.serde import to_data

    try:
        found = timelines(read_dump(args.dump))
    except (ArtifactError, OSError) as exc:
        _error(str(exc) if isinstance(exc, ArtifactError) else f"{args.dump}: {exc.strerror or exc}")
        return EXIT_USAGE
    chosen = [t for t in found if not args.kernel or fnmatch.fnmatch(t.kernel or "", args.kernel)]
    if not chosen:
        _error(f"no kernel{' matching ' + args.kernel if args.kernel else ''} in {args.dump}")
        return EXIT_USAGE
    if args.json:
        write_stdout(json.dumps([to_data(t) for t in chosen], indent=1) + "\n")
        return EXIT_OK
    out = _console()
    width = None if args.wide else out.width
    print_text(Text("\n\n").join(timeline_view(t, args.all, width) for t in chosen) + "\n", out)
    return EXIT_OK


def _cmd_rules(args: argparse.Namespace) -> int:
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
    _console().print(table)
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from irscope.engine.docs import page
    from irscope.engine.selection import find_rule

    rule = find_rule(args.rule)
    if rule is None:
        _error(f"no rule {args.rule!r}; `irscope rules` lists them")
        return EXIT_USAGE
    write_stdout(page(rule))
    return EXIT_OK


def _for_vendor(arch: str, values: dict[str, int]) -> dict[str, int]:
    """Drop the other vendor's names so a what-if reads `--lds` on AMD and `--shared` on NVIDIA."""
    amd = arch.startswith("gfx")
    other = {"registers", "shared", "static_shared", "barriers"} if amd else {"vgprs", "sgprs", "lds"}
    return {k: v for k, v in values.items() if k not in other}


def _run_script(args: argparse.Namespace, script: str) -> int:
    from irscope.render.console import render
    from irscope.engine.selection import RuleConfigError
    from irscope.pipeline.runner import run_script
    from irscope.pipeline.stand_in.devices import DEVICES

    if args.target and args.target not in DEVICES:
        _error(f"--target {args.target}: not one of {', '.join(DEVICES)}")
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
                                args.out, args.sass, _selection(args), dump=args.dump, on_progress=line,
                                run_child=relay)
    except RuleConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("interrupted: the script was stopped, nothing was analyzed, and its run was removed")
        return 130
    report = result.report
    if args.tui and report.kernels:
        try:
            return _run_tui(report, None, tuple(args.source))
        finally:
            if only_for_tui:
                kept_runs.remove([result.kept.name])
    from irscope.render.exports import source_roots, write_scan

    to_stdout = write_scan(report, args) if report.kernels else False  # --sarif, --csv, --parquet, --markdown
    if args.json:
        if args.json == "-":
            write_stdout(report.to_json() + "\n")
        else:
            from irscope.render.outputs import write_text

            write_text(args.json, report.to_json() + "\n")
    if args.json != "-" and not to_stdout and report.kernels:
        out = _console()
        render(report, out, args.wide, args.every_config, args.sweep, source_roots(args))
        if args.dump:
            from irscope.render.passes import timeline_view

            for kr in report.kernels:
                if kr.passes is not None:
                    out.print()
                    out.print(timeline_view(kr.passes, width=None if args.wide else out.width), soft_wrap=True)
    _say_where_the_run_is(result)
    from irscope.pipeline.runner_child import NO_DRIVER

    if result.exit_code == NO_DRIVER and not report.kernels:
        return EXIT_USAGE  # the child said why
    if report.run.reason:
        _error(report.run.reason)
    if not report.kernels:
        hint = " (no GPU driver here? give --target ARCH)" if not args.target else ""
        _error(f"{script} compiled no Triton kernel{hint}; it exited with {result.exit_code}")
        return EXIT_USAGE
    if result.exit_code != 0:
        _error(f"{script} failed (exit {result.exit_code}) after compiling {len(report.kernels)} kernel(s); they are "
               "reported above" + (" (under --target outputs are not computed: a check of results fails)"
                                   if args.target and not report.run.reason else ""))
    return worst(EXIT_PARTIAL if result.exit_code != 0 else EXIT_OK,
                 _status([report], _findings_gate(report, args.fail_on)))


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


def _cmd_runs(args: argparse.Namespace) -> int:
    from irscope.pipeline import kept_runs
    from irscope.render.runs import runs_table

    if args.action == "list":
        if args.ids or args.all:
            _error("`irscope runs` lists; `irscope runs rm ID...` or `irscope runs rm --all` removes")
            return EXIT_USAGE
        runs = kept_runs.list_runs()
        if not runs:
            print(f"irscope: no kept runs in {kept_runs.runs_dir()}", file=sys.stderr)
            return EXIT_OK
        out = _console()
        out.print(runs_table(runs, kept_runs.runs_dir(), None if args.wide else out.width), soft_wrap=True)
        return EXIT_OK
    if not args.ids and not args.all:
        _error("irscope runs rm: give run ids (`irscope runs` lists them) or --all")
        return EXIT_USAGE
    ids = [r.id for r in kept_runs.list_runs()] if args.all else args.ids
    removed, unknown = kept_runs.remove(ids)
    for run_id in removed:
        print(f"irscope: removed {run_id}", file=sys.stderr)
    for run_id in unknown:
        _error(f"no kept run {run_id} (or more than one starts so)")
    return EXIT_USAGE if unknown else EXIT_OK


def _cmd_cache(args: argparse.Namespace) -> int:
    from irscope.pipeline.index_db import ENV_MAX_SIZE, clear_index, index_info
    from irscope.parsers.limits import format_size
    from irscope.model.safe_text import printable
    from irscope.pipeline.result_index import default_index_dir

    directory = default_index_dir()
    if args.action == "clear":
        files, size = clear_index(directory)
        print(f"irscope: removed {files} files ({format_size(size)}) of the result index in "
              f"{printable(str(directory))}", file=sys.stderr)
        return EXIT_OK
    info = index_info(directory)
    entries = info["problem"] if info["entries"] is None else f"{info['entries']:,}"
    print(f"result index  {printable(info['database'])}\nentries       {entries}\n"
          f"size          {format_size(info['size'])} (at most {format_size(info['max_size'])}: {ENV_MAX_SIZE})")
    if info["old_entries"]:
        print(f"old entries   {info['old_entries']:,} pickles of an older irscope, never read "
              "(`irscope cache clear` removes them)")
    return EXIT_OK


def _console():
    from irscope.cli.closed_stdout import console

    out = console(highlight=False)
    if not out.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        out = console(highlight=False, width=200)  # a pipe or a file: don't squeeze tables into 80 columns
    return out


def _error(message: str) -> None:
    # Plain print: a path in a message must not be wrapped, styled or read as markup.
    from irscope.model.safe_text import printable_message

    print(f"irscope: {printable_message(message)}", file=sys.stderr)
