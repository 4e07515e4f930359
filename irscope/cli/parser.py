"""The `irscope` command line's arguments: every command, its flags and their help.

The functions that run the commands are in irscope/cli/*_command.py; irscope/cli/main.py hands them to build_parser.
"""

from __future__ import annotations

import argparse
from typing import Callable, Mapping

from irscope.model.version import __version__

_Commands = Mapping[str, Callable[[argparse.Namespace], int]]


def build_parser(commands: _Commands) -> argparse.ArgumentParser:
    """The command line; `commands` maps each command's name to the function that runs it (irscope/cli/main.py)."""
    from irscope.cli.messages import Parser, add_debug_everywhere, add_usage_line

    parser = Parser(
        prog="irscope",
        description="Analyze the code Triton generated: kernels, registers, LDS, spills.",
    )
    parser.add_argument("--version", action="version", version=f"irscope {__version__}")
    debug_help = "show the Python traceback of an irscope error instead of one line"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    scan = _add_scan(sub, commands)
    _add_diff(sub, commands)
    _add_tui(sub, commands)
    _add_baseline(sub, commands)
    _add_passes(sub, commands)
    _add_rules(sub, commands)
    _add_occupancy(sub, commands)
    _add_runs(sub, commands)
    add_debug_everywhere(sub.choices.values(), debug_help)  # `irscope scan --debug X` too
    add_usage_line(scan, "[options] SCRIPT.py [-- ARGS ...]")
    return parser


def _add_scan(sub, commands: _Commands) -> argparse.ArgumentParser:
    """`irscope scan PATH...` and `irscope scan SCRIPT.py [-- ARGS]`."""
    scan = sub.add_parser(
        "scan", help="list every kernel under a Triton cache with its resource usage",
        description="Harvest every kernel under PATH (default: $TRITON_CACHE_DIR, else "
                    "$TRITON_HOME/.triton/cache, else ~/.triton/cache) and print one row per kernel. "
                    "PATH may be a cache, a torch inductor cache, a TRITON_KERNEL_DUMP directory, "
                    "one hash directory or one artifact file. Nothing under PATH is written.",
    )
    scan.add_argument("paths", nargs="*", metavar="PATH",
                      help="a Triton cache, a torch inductor cache, a TRITON_KERNEL_DUMP directory, one kernel's "
                           "hash directory or artifact; or SCRIPT.py [-- ARGS ...]: run the script (ARGS are its "
                           "own) and scan the kernels it compiles")
    scan.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE ('-' for stdout)")
    from irscope.render.exports import add_scan_flags

    add_scan_flags(scan)  # --sarif, --csv, --parquet, --markdown (irscope/render/exports.py)
    scan.add_argument("--sass", action="store_true",
                      help="also disassemble each cubin with nvdisasm (Triton's bundled one, TRITON_NVDISASM_PATH, "
                           "or CUDA's) and count its SASS instructions")
    _analysis_flags(scan)
    scan.add_argument("--target", metavar="ARCH",
                      help="with a script: compile every launch for ARCH (gfx942, gfx950, gfx90a, gfx1100, gfx1200, "
                           "sm_90, sm_80, ...) on any machine; nothing runs")
    scan.add_argument("--profile", nargs="?", const="time", choices=("time", "counters"), metavar="counters",
                      help="with a script, on this machine's GPU: time every kernel with Proton and rank the "
                           "kernels by GPU time; --profile=counters instead runs the script under Nsight Compute "
                           "and reads each kernel's occupancy, DRAM bytes and instructions (docs/profile.md)")
    scan.add_argument("--profile-plot", metavar="FILE",
                      help="with --profile: draw the run's Triton kernels on the device's roofline into FILE (.png "
                           "or .svg; needs matplotlib: pip install 'irscope[plot]')")
    scan.add_argument("--dump", action="store_true",
                      help="with a script: capture MLIR_ENABLE_DUMP and show which pass introduced each layout "
                           "conversion and LDS buffer (Triton 3.3+)")
    keep = scan.add_mutually_exclusive_group()
    keep.add_argument("--keep", action="store_true", default=None,
                      help="with a script: keep this run until `irscope runs rm` removes it (runs are kept anyway "
                           "among the newest $IRSCOPE_KEEP_RUNS, default 10: `irscope runs` lists them)")
    keep.add_argument("--no-keep", dest="keep", action="store_false",
                      help="with a script: remove the run's cache when the scan is done")
    keep.add_argument("--out", metavar="DIR", help="with a script: put the run's cache and launches in DIR and keep it")
    scan.add_argument("--tui", action="store_true", help="open the result in the Textual browser (irscope tui)")
    scan.add_argument("--fail-on", choices=("error", "warning", "info"), metavar="SEVERITY",
                      help="exit 1 when any finding is at SEVERITY (error, warning or info) or above; default: "
                           "findings do not change the exit status (README: Exit codes)")
    _wide_flag(scan)
    configs = scan.add_mutually_exclusive_group()
    configs.add_argument("--all", action="store_true", dest="every_config",
                         help="list every autotune config as its own kernel, with its own findings, instead of one "
                              "block per kernel family")
    configs.add_argument("--sweep", action="store_true",
                         help="show every config of each kernel family as a row (by default the 10 most serious "
                              "that can launch)")
    _quiet_flag(scan)
    _selection_flags(scan)
    scan.set_defaults(func=commands["scan"])
    return scan


def _add_diff(sub, commands: _Commands) -> None:
    """`irscope diff BEFORE AFTER`."""
    from irscope.render.exports import add_diff_flags

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
    _artifacts_flag(diff)
    add_diff_flags(diff)  # --markdown
    _analysis_flags(diff)
    diff.add_argument("--fail-on", choices=("regression",),
                      help="exit 1 when any pair regressed ([tool.irscope] regression picks the checks)")
    _selection_flags(diff)
    _wide_flag(diff)
    _quiet_flag(diff)
    diff.set_defaults(func=commands["diff"])


def _add_tui(sub, commands: _Commands) -> None:
    """`irscope tui [PATH...] [--diff BEFORE AFTER]`."""
    tui = sub.add_parser(
        "tui", help="browse kernels, IR, ISA, findings, occupancy and diffs in the terminal",
        description="Open the Textual browser on a cache, kernel directory or saved report (default: the "
                    "user's Triton cache), or on two builds with --diff BEFORE AFTER. Press ? for the keys.")
    tui.add_argument("paths", nargs="*", metavar="PATH")
    tui.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two builds side by side")
    tui.add_argument("--source", action="append", default=[], metavar="DIR",
                     help="where the kernels' Python files are, when the paths the artifacts name are not here")
    _artifacts_flag(tui)
    _analysis_flags(tui)
    tui.set_defaults(func=commands["tui"])


def _add_baseline(sub, commands: _Commands) -> None:
    """`irscope baseline PATH > irscope-baseline.json`."""
    baseline = sub.add_parser(
        "baseline", help="write the current findings as accepted, for pytest --irscope-baseline",
        description="Scan PATH (or read a saved report) and write its findings to stdout as a baseline: "
                    "`irscope baseline PATH > irscope-baseline.json`. With --irscope-baseline FILE, the pytest "
                    "plugin fails only on findings the baseline does not hold (irscope/engine/baseline.py: the key).")
    baseline.add_argument("paths", nargs="*", metavar="PATH")
    _analysis_flags(baseline)
    _quiet_flag(baseline)
    _selection_flags(baseline)
    baseline.set_defaults(func=commands["baseline"])


def _add_passes(sub, commands: _Commands) -> None:
    """`irscope passes DUMP`."""
    passes = sub.add_parser(
        "passes", help="the pass timeline of an MLIR_ENABLE_DUMP log",
        description="Read a saved MLIR_ENABLE_DUMP log (plain or .gz) and show, per kernel, the passes in "
                    "order, which changed the IR, and the pass that introduced each convert_layout and LDS "
                    "buffer (local_alloc) of the final TTGIR.")
    passes.add_argument("dump", metavar="DUMP")
    passes.add_argument("--kernel", "-k", metavar="PATTERN", help="only kernels whose name matches this glob")
    passes.add_argument("--all", action="store_true", help="list every pass, not only those that changed the IR")
    passes.add_argument("--json", action="store_true", help="print the timelines as JSON")
    _wide_flag(passes)
    passes.set_defaults(func=commands["passes"])


def _add_rules(sub, commands: _Commands) -> None:
    """`irscope rules` and `irscope explain CODE`."""
    rules = sub.add_parser("rules", help="list the rules: code, slug, severity, what each finds",
                           description="List every registered rule (irscope's own and any installed plugin's).")
    rules.set_defaults(func=commands["rules"])
    explain = sub.add_parser("explain", help="print one rule's documentation",
                             description="Print a rule's documentation: what it does, why it matters, an "
                                         "example, and how to fix it in the kernel.")
    explain.add_argument("rule", metavar="CODE", help="a rule code (IRS101) or slug (narrow-global-load)")
    explain.set_defaults(func=commands["explain"])


def _add_occupancy(sub, commands: _Commands) -> None:
    """`irscope occupancy [PATH...]`, or a what-if with --arch and numbers."""
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
    _wide_flag(occ)
    occ.set_defaults(func=commands["occupancy"])


def _add_runs(sub, commands: _Commands) -> None:
    """`irscope runs [list|rm]` and `irscope cache [info|clear]`."""
    runs = sub.add_parser(
        "runs", help="list or remove the kept runs of `irscope scan script.py`",
        description="Script runs are kept where irscope keeps its data ($IRSCOPE_CACHE_DIR, else "
                    "~/.cache/irscope, in runs/), the newest $IRSCOPE_KEEP_RUNS (default 10) and those "
                    "pinned with --keep, so that a run's report (RUN/report.json) and its artifacts open later "
                    "in `irscope tui` and `irscope diff --stage`. With no action: list them.")
    runs.add_argument("action", nargs="?", choices=("list", "rm"), default="list")
    runs.add_argument("ids", nargs="*", metavar="ID", help="rm: the runs to remove (an id or a unique prefix)")
    runs.add_argument("--all", action="store_true", help="rm: remove every kept run")
    _wide_flag(runs)
    runs.set_defaults(func=commands["runs"])

    cache = sub.add_parser(
        "cache", help="where the result index is and how large, or empty it",
        description="The result index keeps each kernel's results so that a re-scan of an unchanged cache reads "
                    "them ($IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope, in index/). "
                    "Entries used least recently are evicted beyond $IRSCOPE_INDEX_MAX_SIZE (default 256M). "
                    "`info` (the default) says where it is, its entries and size; `clear` removes it.")
    cache.add_argument("action", nargs="?", choices=("info", "clear"), default="info")
    cache.set_defaults(func=commands["cache"])


def _wide_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", action="store_true",
                        help="show every table column whole; by default columns are hidden from the right, and "
                             "long names cut in the middle, to fit the terminal")


def _quiet_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true",
                        help="no progress line on stderr (it shows only when stderr is a terminal: kernels "
                             "harvested, analyzed and read from the result index)")


def _selection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="only these rules: codes, code prefixes (IRS1), slugs or ALL, comma-separated; "
                             "replaces [tool.irscope] select")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="skip these rules (added to [tool.irscope] ignore)")


def _count(text: str) -> int:
    value = _number(text, "a count")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative (give a count, 0 or more)")
    return value


def _number(text: str, what: str) -> int:
    """int(text), or a usage error that says a number is wanted (argparse would name the function)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (give {what})") from None


def _artifacts_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--artifacts", metavar="DIR",
                        help="read the artifacts a saved report names from DIR, a copy of the cache it scanned "
                             "(each file's path under its scan root is looked up under DIR); without it, only "
                             "under the report's scan roots on this machine. Either way a file is read only when "
                             "its bytes match the digest the report recorded")


def _analysis_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of every command that analyzes kernels: the result index, workers, the size limit."""
    parser.add_argument("--no-cache", action="store_true",
                        help="analyze every kernel afresh, without irscope's result index ($IRSCOPE_CACHE_DIR, else "
                             "~/.cache/irscope; never inside the scanned paths)")
    parser.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                        help="worker processes for the analysis (default: one per core)")
    parser.add_argument("--max-file-size", type=_size, metavar="SIZE",
                        help="read no artifact larger than SIZE (bytes, or 128M, 1G; default 64M, and 8M for "
                             ".ttir/.ttgir, 16M for .amdgcn/.ptx): a larger one is reported against its kernel, "
                             "not read")


def _size(text: str) -> int:
    from irscope.model.limits import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"-j needs a number of worker processes, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"-j {text}: give 1 or more worker processes (leave -j out for one "
                                         "per core)")
    return value
