"""The `irscope` command line.

Exit codes (docs: README "Exit codes"):
  0  the scan ran; kernels that could not be read are listed as problems
  2  unusable input: a missing path, nothing that is a Triton kernel, a bad argument
"""

from __future__ import annotations

import argparse
import sys

from irscope import __version__

EXIT_OK = 0
EXIT_USAGE = 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    return args.func(args)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="irscope",
        description="Analyze the code Triton generated: kernels, registers, LDS, spills.",
    )
    parser.add_argument("--version", action="version", version=f"irscope {__version__}")
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
    scan.add_argument("--sass", action="store_true",
                      help="also disassemble each cubin with nvdisasm (Triton's bundled one, TRITON_NVDISASM_PATH, "
                           "or CUDA's) and count its SASS instructions")
    scan.set_defaults(func=_cmd_scan)
    return parser


def _cmd_scan(args: argparse.Namespace) -> int:
    from rich.console import Console

    from irscope.harvester import HarvestError
    from irscope.render.console import render
    from irscope.pipeline import scan

    scripts = [p for p in args.paths if p.endswith(".py")]
    if scripts:
        _error(f"{scripts[0]} is a Python script; running scripts is not available yet "
               "(point irscope at the Triton cache the script filled).")
        return EXIT_USAGE
    try:
        report = scan(args.paths or None, sass=args.sass)
    except HarvestError as exc:
        _error(str(exc))
        return EXIT_USAGE
    if not report.kernels:
        where = ", ".join(report.roots)
        _error(f"no Triton kernels found under {where}")
        return EXIT_USAGE

    if args.json == "-":
        sys.stdout.write(report.to_json() + "\n")
        return EXIT_OK
    if args.json:
        report.save(args.json)
    out = Console(highlight=False)
    if not out.is_terminal:  # a pipe or a file: don't squeeze the table into 80 columns
        out = Console(highlight=False, width=160)
    render(report, out)
    return EXIT_OK


def _error(message: str) -> None:
    # Plain print: a path in a message must not be wrapped, styled or read as markup.
    from irscope.render.safe import printable

    print(f"irscope: {printable(message)}", file=sys.stderr)
