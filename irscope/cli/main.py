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

from irscope.cli.common import error
from irscope.cli.exit_codes import EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # answered before the command modules are imported (issue 25: < 100 ms)
        from irscope.model.version import __version__

        print(f"irscope {__version__}")
        return 0
    from irscope.cli.kept_views import replay

    kept = replay(argv)  # the same scan of an unchanged cache: its kept output (irscope/cli/kept_views.py)
    if kept is not None:
        return kept
    command_argv = list(argv)
    parser = _parser()
    script_args: list[str] = []
    if "--" in argv:  # `irscope scan script.py [options] -- script args`
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1:]
    args = parser.parse_args(argv)
    args.script_args = script_args
    args.command_argv = None if script_args else command_argv
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
        error(str(exc))
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a bug in irscope: one line, the traceback under --debug
        if debug_enabled():
            raise
        error(f"internal error: {type(exc).__name__}: {exc} (this is irscope's bug; --debug shows the traceback)")
        return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    """The command line, each command run by its module of irscope/cli/ (scan_command.py, diff_command.py, ...)."""
    from irscope.cli.diff_command import cmd_diff
    from irscope.cli.occupancy_command import cmd_occupancy
    from irscope.cli.parser import build_parser
    from irscope.cli.passes_command import cmd_passes
    from irscope.cli.rules_command import cmd_baseline, cmd_explain, cmd_rules
    from irscope.cli.runs_command import cmd_cache, cmd_runs
    from irscope.cli.scan_command import cmd_scan
    from irscope.cli.tui_command import cmd_tui

    return build_parser({"scan": cmd_scan, "diff": cmd_diff, "tui": cmd_tui, "baseline": cmd_baseline,
                         "passes": cmd_passes, "rules": cmd_rules, "explain": cmd_explain,
                         "occupancy": cmd_occupancy, "runs": cmd_runs, "cache": cmd_cache})
