"""The `irscope` command line.

Exit codes (docs: README "Exit codes"):
  0  the command ran; kernels that could not be read are listed as problems
  1  `diff --fail-on regression`: a kernel pair regressed
  2  unusable input: a missing path, nothing that is a Triton kernel, a bad argument
  3  `scan script.py`: the script failed after compiling kernels (they are reported)
"""

from __future__ import annotations

import argparse
import os
import sys

from irscope import __version__

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_SCRIPT_FAILED = 3


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
    # A command holds one report and exits: collecting cycles while it renders a 1,000-kernel
    # report walked every result again and again. Analysis turns collection back on
    # (pipeline._collecting, the workers' initializer).
    from irscope.pipeline import debug_enabled, paused_gc

    if args.debug:
        os.environ["IRSCOPE_DEBUG"] = "1"  # worker processes inherit it
    try:
        with paused_gc():
            return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug in irscope: one line, the traceback under --debug
        if debug_enabled():
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (this is irscope's bug; --debug shows the traceback)")
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irscope",
        description="Analyze the code Triton generated: kernels, registers, LDS, spills.",
    )
    parser.add_argument("--version", action="version", version=f"irscope {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an irscope error instead of one line")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    scan = sub.add_parser(
        "scan", help="list every kernel under a Triton cache with its resource usage",
        description="Harvest every kernel under PATH (default: $TRITON_CACHE_DIR, else "
                    "$TRITON_HOME/.triton/cache, else ~/.triton/cache) and print one row per kernel. "
                    "PATH may be a cache, a torch inductor cache, a TRITON_KERNEL_DUMP directory, "
                    "one hash directory or one artifact file. Nothing under PATH is written.",
    )
    scan.add_argument("paths", nargs="*", metavar="PATH")
    scan.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE ('-' for stdout)")
    from irscope.exports import add_diff_flags, add_scan_flags

    add_scan_flags(scan)  # --sarif, --csv, --parquet, --markdown (irscope/exports.py)
    scan.add_argument("--sass", action="store_true",
                      help="also disassemble each cubin with nvdisasm (Triton's bundled one, TRITON_NVDISASM_PATH, "
                           "or CUDA's) and count its SASS instructions")
    scan.add_argument("--no-cache", action="store_true",
                      help="analyze every kernel afresh, without irscope's result index ($IRSCOPE_CACHE_DIR, else "
                           "~/.cache/irscope; never inside the scanned paths)")
    scan.add_argument("--target", metavar="ARCH",
                      help="with a script: compile every launch for ARCH (gfx942, gfx950, gfx90a, gfx1100, gfx1200, "
                           "sm_90, sm_80, ...) on any machine; nothing runs")
    scan.add_argument("--dump", action="store_true",
                      help="with a script: capture MLIR_ENABLE_DUMP and show which pass introduced each layout "
                           "conversion and LDS buffer (Triton 3.3+)")
    scan.add_argument("--keep", action="store_true", help="with a script: keep the run's cache (its path is printed)")
    scan.add_argument("--out", metavar="DIR", help="with a script: put the run's cache and launches in DIR and keep it")
    scan.add_argument("--tui", action="store_true", help="open the result in the Textual browser (irscope tui)")
    scan.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                      help="worker processes for the analysis (default: one per core)")
    _selection_flags(scan)
    scan.set_defaults(func=_cmd_scan)

    diff = sub.add_parser(
        "diff", help="compare two builds: resources, occupancy, instruction mix, findings, layouts",
        description="Pair the kernels of BEFORE and AFTER (cache directories, kernel directories or saved "
                    "JSON reports) and show what changed. Exit 1 with --fail-on regression when a pair "
                    "regressed (README: Exit codes).")
    diff.add_argument("before", metavar="BEFORE")
    diff.add_argument("after", metavar="AFTER")
    diff.add_argument("--pair", action="append", default=[], metavar="A=B",
                      help="pair these two kernels (a key, a name, or name@arch on each side)")
    diff.add_argument("--stage", choices=("ttir", "ttgir", "llir", "amdgcn", "ptx"),
                      help="also show a text diff of this stage, with names, registers, labels and locations "
                           "normalized")
    diff.add_argument("--json", metavar="FILE", help="write the whole diff as JSON to FILE ('-' for stdout)")
    add_diff_flags(diff)  # --markdown
    diff.add_argument("--no-cache", action="store_true", help="analyze every kernel afresh (see scan --no-cache)")
    diff.add_argument("--fail-on", choices=("regression",),
                      help="exit 1 when any pair regressed ([tool.irscope] regression picks the checks)")
    diff.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                      help="worker processes for the analysis (default: one per core)")
    _selection_flags(diff)
    diff.set_defaults(func=_cmd_diff)

    tui = sub.add_parser(
        "tui", help="browse kernels, IR, ISA, findings, occupancy and diffs in the terminal",
        description="Open the Textual browser on a cache, kernel directory or saved report (default: the "
                    "user's Triton cache), or on two builds with --diff BEFORE AFTER. Press ? for the keys.")
    tui.add_argument("paths", nargs="*", metavar="PATH")
    tui.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two builds side by side")
    tui.add_argument("--source", action="append", default=[], metavar="DIR",
                     help="where the kernels' Python files are, when the paths the artifacts name are not here")
    tui.add_argument("--no-cache", action="store_true", help="analyze every kernel afresh (see scan --no-cache)")
    tui.set_defaults(func=_cmd_tui)

    baseline = sub.add_parser(
        "baseline", help="write the current findings as accepted, for pytest --irscope-baseline",
        description="Scan PATH (or read a saved report) and write its findings to stdout as a baseline: "
                    "`irscope baseline PATH > irscope-baseline.json`. With --irscope-baseline FILE, the pytest "
                    "plugin fails only on findings the baseline does not hold (irscope/baseline.py: the key).")
    baseline.add_argument("paths", nargs="*", metavar="PATH")
    baseline.add_argument("--no-cache", action="store_true", help="analyze every kernel afresh (see scan --no-cache)")
    baseline.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                          help="worker processes for the analysis (default: one per core)")
    _selection_flags(baseline)
    baseline.set_defaults(func=_cmd_baseline)

    passes = sub.add_parser(
        "passes", help="the pass timeline of an MLIR_ENABLE_DUMP log",
        description="Read a saved MLIR_ENABLE_DUMP log (plain or .gz) and show, per kernel, the passes in "
                    "order, which changed the IR, and the pass that introduced each convert_layout and LDS "
                    "buffer (local_alloc) of the final TTGIR.")
    passes.add_argument("dump", metavar="DUMP")
    passes.add_argument("--kernel", "-k", metavar="PATTERN", help="only kernels whose name matches this glob")
    passes.add_argument("--all", action="store_true", help="list every pass, not only those that changed the IR")
    passes.add_argument("--json", action="store_true", help="print the timelines as JSON")
    passes.set_defaults(func=_cmd_passes)

    rules = sub.add_parser("rules", help="list the rules: code, slug, severity, what each finds",
                           description="List every registered rule (irscope's own and any installed plugin's).")
    rules.set_defaults(func=_cmd_rules)
    explain = sub.add_parser("explain", help="print one rule's documentation",
                             description="Print a rule's documentation: what it does, why it matters, an "
                                         "example, and how to fix it in the kernel.")
    explain.add_argument("rule", metavar="CODE", help="a rule code (IRS101) or slug (narrow-global-load)")
    explain.set_defaults(func=_cmd_explain)

    occ = sub.add_parser(
        "occupancy", help="occupancy of harvested kernels, or of numbers you give (what-if)",
        description="With PATH: the occupancy of every kernel under PATH (filter with --kernel), "
                    "from its artifacts; any number given below replaces the kernel's own. "
                    "Without PATH: the occupancy of --arch with the numbers given.",
    )
    occ.add_argument("paths", nargs="*", metavar="PATH")
    occ.add_argument("--kernel", "-k", metavar="PATTERN",
                     help="only kernels whose name or key matches this glob pattern")
    occ.add_argument("--arch", help="gfx90a, gfx942, gfx950, gfx1100, gfx1200, gfx1201, sm_80, sm_86, sm_89, "
                                    "sm_90, sm_100, sm_120 (what-if without PATH)")
    for flag, what in (("vgprs", "AMD: VGPRs per lane, arch + AGPR (.vgpr_count)"),
                       ("sgprs", "AMD: SGPRs"),
                       ("lds", "LDS / shared memory bytes per workgroup (Triton's `shared`); default 0"),
                       ("warps", "num_warps"),
                       ("registers", "NVIDIA: registers per thread"),
                       ("shared", "NVIDIA: dynamic shared bytes per block (same as --lds)"),
                       ("static-shared", "NVIDIA: static shared bytes per block, without the sm_90 reserve"),
                       ("barriers", "NVIDIA: named barriers per block")):
        occ.add_argument(f"--{flag}", type=_count, metavar="N", help=what)
    occ.add_argument("--json", action="store_true", help="print the results as JSON")
    occ.set_defaults(func=_cmd_occupancy)
    return parser


def _selection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="only these rules: codes, code prefixes (IRS1), slugs or ALL, comma-separated; "
                             "replaces [tool.irscope] select")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="skip these rules (added to [tool.irscope] ignore)")


def _selection(args: argparse.Namespace):
    """[tool.irscope] from the nearest pyproject.toml, then the command line's flags."""
    from irscope.rule_engine import load_config

    def split(values: list[str]) -> list[str]:
        return [v.strip() for value in values for v in value.split(",") if v.strip()]

    return load_config().extended(split(args.select), split(args.ignore))


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def _jobs(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give 1 or more")
    return value


def _cmd_scan(args: argparse.Namespace) -> int:
    from irscope.harvester import HarvestError
    from irscope.render.console import render
    from irscope.pipeline import scan

    from irscope.rule_engine import RuleConfigError

    scripts = [p for p in args.paths if p.endswith(".py")]
    if scripts and (len(args.paths) > 1 or not os.path.isfile(scripts[0])):
        _error(f"give one script to run ({scripts[0]} {'is not a file' if not os.path.isfile(scripts[0]) else ''}"
               f"{'and nothing else' if len(args.paths) > 1 else ''})".replace("( ", "("))
        return EXIT_USAGE
    if (args.target or args.keep or args.out or args.dump or args.script_args) and not scripts:
        _error("--target, --keep, --out and `-- args` go with a script: irscope scan script.py --target gfx942")
        return EXIT_USAGE
    from irscope.exports import check as check_exports

    problem = check_exports(args)  # before a long scan: two outputs on stdout, no pyarrow
    if problem:
        _error(problem)
        return EXIT_USAGE
    if scripts:
        return _run_script(args, scripts[0])
    from irscope.parsers.mlir_dump import is_dump

    if len(args.paths) == 1 and os.path.isfile(args.paths[0]) and is_dump(args.paths[0]):
        args.dump, args.kernel, args.all = args.paths[0], None, False
        return _cmd_passes(args)  # a saved MLIR_ENABLE_DUMP log: its pass timeline
    try:
        report = scan(args.paths or None, sass=args.sass, rules=_selection(args), index=not args.no_cache,
                      jobs=args.jobs)
    except (HarvestError, RuleConfigError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        where = ", ".join(report.roots)
        _error(f"no Triton kernels found under {where}")
        return EXIT_USAGE

    if args.tui:
        if args.json and args.json != "-":
            report.save(args.json)
        return _run_tui(report, None, ())
    from irscope.exports import write_scan

    to_stdout = write_scan(report, args)  # --sarif, --csv, --parquet, --markdown
    if args.json == "-":
        sys.stdout.write(report.to_json() + "\n")
        return EXIT_OK
    if args.json:
        report.save(args.json)
    if not to_stdout:
        render(report, _console())
    return EXIT_OK


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

    from irscope.harvester import HarvestError
    from irscope.occupancy import kernel_occupancy, occupancy_for
    from irscope.pipeline import scan
    from irscope.render.occupancy import occupancy_table
    from irscope.serde import to_data

    what_if = _what_if(args)
    results = []
    if not args.paths:
        if not args.arch:
            _error("give a PATH to harvested kernels, or --arch and the numbers for a what-if")
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
        for r in chosen:
            title = f"{r.kernel.name}  {r.kernel.target or '?'}  {r.kernel.key}"
            arch = r.kernel.target.arch if r.kernel.target else ""
            occ, problems = kernel_occupancy(r.kernel, r.resources, _for_vendor(arch, what_if)) \
                if what_if else (r.occupancy, [])
            if occ is None:
                reasons = problems or [p for p in r.problems if p.message.startswith("occupancy")]
                _error(f"{r.kernel.key}: " + ("; ".join(p.message for p in reasons) or "occupancy unknown"))
                continue
            results.append((title, r.kernel, occ))
    if args.json:
        rows = [{"kernel": k.name if k else None, "key": k.key if k else None, **to_data(o)} for _, k, o in results]
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return EXIT_OK if results else EXIT_USAGE
    out = _console()
    for title, _, occ in results:
        out.print(occupancy_table(title, occ))
        out.print()
    return EXIT_OK if results else EXIT_USAGE


def _load_side(path: str, selection, index: bool = True, jobs: int | None = None):
    """A saved report (`*.json` holding a Report), or a scan of a directory or artifact."""
    from pathlib import Path

    from irscope.pipeline import scan
    from irscope.report import Report

    if path.endswith(".json") and Path(path).is_file():
        import json

        text = Path(path).read_text(errors="replace")
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("schema") == "irscope.report":
            return Report.from_json(text, path)
    return scan(path, rules=selection, index=index, jobs=jobs)


def _cmd_diff(args: argparse.Namespace) -> int:
    import json

    from irscope.diff import diff_reports, load_policy
    from irscope.harvester import HarvestError
    from irscope.render.diff import render
    from irscope.report import ReportError
    from irscope.rule_engine import RuleConfigError
    from irscope.serde import to_data
    from irscope.stage_diff import stage_diff

    from irscope.exports import check as check_exports

    problem = check_exports(args, ("json", "markdown"))
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
        before = _load_side(args.before, selection, not args.no_cache, args.jobs)
        after = _load_side(args.after, selection, not args.no_cache, args.jobs)
        report = diff_reports(before, after, tuple(pairs), policy)
    except (HarvestError, ReportError, RuleConfigError, ValueError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if not report.pairs and not report.only_before and not report.only_after:
        _error(f"no Triton kernels found in {args.before} or {args.after}")
        return EXIT_USAGE
    stages = None
    if args.stage:
        kernels = {k.kernel.key: k.kernel for k in (*before.kernels, *after.kernels)}
        stages = {}
        for p in report.pairs:
            a, b = kernels[p.before_key].artifact(args.stage), kernels[p.after_key].artifact(args.stage)
            stages[p.after_key] = stage_diff(a.path, b.path) if a and b else [f"(no .{args.stage} on both sides)"]
    if args.json:
        data = {"schema": "irscope.diff", "schema_version": 1, **to_data(report)}
        if stages is not None:
            data["stage_diffs"] = {"stage": args.stage, "lines": stages}
        text = json.dumps(data, indent=1) + "\n"
        if args.json == "-":
            sys.stdout.write(text)
        else:
            from pathlib import Path

            Path(args.json).write_text(text)
    from irscope.exports import write_diff

    to_stdout = write_diff(report, args)  # --markdown
    if args.json != "-" and not to_stdout:
        render(report, _console(), stages)
    return EXIT_REGRESSION if args.fail_on == "regression" and report.regressed else EXIT_OK


def _cmd_tui(args: argparse.Namespace) -> int:
    from irscope.harvester import HarvestError
    from irscope.report import ReportError

    try:
        if args.diff:
            from irscope.diff import diff_reports, load_policy

            before, after = (_load_side(p, None, not args.no_cache) for p in args.diff)
            report, diff = None, diff_reports(before, after, policy=load_policy())
        else:
            if len(args.paths) == 1:  # a cache, a kernel directory or a saved report
                report = _load_side(args.paths[0], None, not args.no_cache)
            else:
                from irscope.pipeline import scan

                report = scan(args.paths or None, index=not args.no_cache)
            diff = None
    except (HarvestError, ReportError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    if report is not None and not report.kernels:
        _error(f"no Triton kernels found under {', '.join(report.roots)}")
        return EXIT_USAGE
    return _run_tui(report, diff, tuple(args.source))


def _run_tui(report, diff, source_dirs: tuple[str, ...]) -> int:
    try:
        from irscope.tui.app import IrscopeApp
    except ImportError as exc:  # textual is a dependency; a broken install says what is missing
        _error(f"the TUI needs textual: {exc}")
        return EXIT_USAGE
    IrscopeApp(report=report, diff=diff, source_dirs=source_dirs).run()
    return EXIT_OK


def _cmd_baseline(args: argparse.Namespace) -> int:
    from irscope.api import load
    from irscope.baseline import Baseline
    from irscope.harvester import HarvestError
    from irscope.report import ReportError

    try:
        report = load(args.paths or None, rules=_selection(args), index=not args.no_cache, jobs=args.jobs)
    except (HarvestError, ReportError, ValueError) as exc:  # RuleConfigError is a ValueError
        _error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        _error(f"no Triton kernels found under {', '.join(report.roots) or ', '.join(args.paths)}")
        return EXIT_USAGE
    baseline = Baseline.of(report)
    sys.stdout.write(baseline.to_json())
    print(f"irscope: {sum(baseline.counts.values())} finding(s) of {len(report.kernels)} kernel(s) in the baseline",
          file=sys.stderr)
    return EXIT_OK


def _cmd_passes(args: argparse.Namespace) -> int:
    import fnmatch
    import json

    from irscope.parsers.errors import ArtifactError
    from irscope.parsers.mlir_dump import read_dump
    from irscope.pass_timeline import timelines
    from irscope.render.passes import timeline_view
    from irscope.serde import to_data

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
        sys.stdout.write(json.dumps([to_data(t) for t in chosen], indent=1) + "\n")
        return EXIT_OK
    out = _console()
    for t in chosen:
        out.print(timeline_view(t, args.all))
        out.print()
    return EXIT_OK


def _cmd_rules(args: argparse.Namespace) -> int:
    from rich.table import Table
    from rich.text import Text

    from irscope.rule_engine import load_rules

    table = Table(header_style="bold")
    for name in ("code", "slug", "severity", "reads", "what it finds"):
        table.add_column(name, no_wrap=name != "what it finds")
    for rule in load_rules():
        table.add_row(rule.code, rule.slug, rule.severity, ", ".join(rule.stages), Text(rule.summary))
    _console().print(table)
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from irscope.rule_docs import page
    from irscope.rule_engine import find_rule

    rule = find_rule(args.rule)
    if rule is None:
        _error(f"no rule {args.rule!r}; `irscope rules` lists them")
        return EXIT_USAGE
    sys.stdout.write(page(rule))
    return EXIT_OK


def _for_vendor(arch: str, values: dict[str, int]) -> dict[str, int]:
    """Drop the other vendor's names so a what-if reads `--lds` on AMD and `--shared` on NVIDIA."""
    amd = arch.startswith("gfx")
    other = {"registers", "shared", "static_shared", "barriers"} if amd else {"vgprs", "sgprs", "lds"}
    return {k: v for k, v in values.items() if k not in other}


def _run_script(args: argparse.Namespace, script: str) -> int:
    from irscope.render.console import render
    from irscope.rule_engine import RuleConfigError
    from irscope.runner import run_script
    from irscope.stand_in_driver import TARGETS

    if args.target and args.target not in TARGETS:
        _error(f"--target {args.target}: not one of {', '.join(TARGETS)}")
        return EXIT_USAGE
    try:
        result = run_script(script, tuple(args.script_args), args.target, args.keep, args.out, args.sass,
                            _selection(args), dump=args.dump)
    except RuleConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    report = result.report
    from irscope.exports import write_scan

    to_stdout = write_scan(report, args) if report.kernels else False  # --sarif, --csv, --parquet, --markdown
    if args.json:
        if args.json == "-":
            sys.stdout.write(report.to_json() + "\n")
        else:
            report.save(args.json)
    if args.json != "-" and not to_stdout and report.kernels:
        out = _console()
        render(report, out)
        if args.dump:
            from irscope.render.passes import timeline_view

            for kr in report.kernels:
                if kr.passes is not None:
                    out.print()
                    out.print(timeline_view(kr.passes))
    if result.kept is not None:
        print(f"irscope: the run's cache is kept in {result.kept}", file=sys.stderr)
    elif report.kernels:
        print("irscope: the artifact paths above were in the run's temporary cache, now removed; --keep keeps it",
              file=sys.stderr)
    from irscope.runner_child import NO_DRIVER

    if result.exit_code == NO_DRIVER and not report.kernels:
        return EXIT_USAGE  # the child said why
    if not report.kernels:
        hint = " (no GPU driver here? give --target ARCH)" if not args.target else ""
        _error(f"{script} compiled no Triton kernel{hint}; it exited with {result.exit_code}")
        return EXIT_USAGE
    if result.exit_code != 0:
        _error(f"{script} failed (exit {result.exit_code}) after compiling {len(report.kernels)} kernel(s); they are "
               "reported above" + (" (with --target nothing runs, so a script's own result checks fail)"
                                   if args.target else ""))
        return EXIT_SCRIPT_FAILED
    return EXIT_OK


def _console():
    from rich.console import Console

    out = Console(highlight=False)
    if not out.is_terminal:  # a pipe or a file: don't squeeze tables into 80 columns
        out = Console(highlight=False, width=200)
    return out


def _error(message: str) -> None:
    # Plain print: a path in a message must not be wrapped, styled or read as markup.
    from irscope.render.safe import printable

    print(f"irscope: {printable(message)}", file=sys.stderr)
