"""`irscope runs` (the kept runs of `irscope scan script.py`) and `irscope cache` (the result index)."""

from __future__ import annotations

import argparse
import sys

from irscope.cli.common import error, stdout_console
from irscope.cli.exit_codes import EXIT_OK, EXIT_USAGE


def cmd_runs(args: argparse.Namespace) -> int:
    from irscope.pipeline import kept_runs
    from irscope.render.runs import runs_table

    if args.action == "list":
        if args.ids or args.all:
            error("`irscope runs` lists; `irscope runs rm ID...` or `irscope runs rm --all` removes")
            return EXIT_USAGE
        runs = kept_runs.list_runs()
        if not runs:
            print(f"irscope: no kept runs in {kept_runs.runs_dir()}", file=sys.stderr)
            return EXIT_OK
        out = stdout_console()
        out.print(runs_table(runs, kept_runs.runs_dir(), None if args.wide else out.width), soft_wrap=True)
        return EXIT_OK
    if not args.ids and not args.all:
        error("irscope runs rm: give run ids (`irscope runs` lists them) or --all")
        return EXIT_USAGE
    ids = [r.id for r in kept_runs.list_runs()] if args.all else args.ids
    removed, unknown = kept_runs.remove(ids)
    for run_id in removed:
        print(f"irscope: removed {run_id}", file=sys.stderr)
    for run_id in unknown:
        error(f"no kept run {run_id} (or more than one starts so)")
    return EXIT_USAGE if unknown else EXIT_OK


def cmd_cache(args: argparse.Namespace) -> int:
    from irscope.pipeline.index_db import ENV_MAX_SIZE, clear_index, index_info
    from irscope.model.limits import format_size
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

