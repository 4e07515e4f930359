"""`irscope passes DUMP`: the pass timeline of a saved MLIR_ENABLE_DUMP log."""

from __future__ import annotations

import argparse

from irscope.render.closed_stdout import write_stdout
from irscope.cli.common import error, stdout_console
from irscope.cli.exit_codes import EXIT_OK, EXIT_USAGE


def cmd_passes(args: argparse.Namespace) -> int:
    import fnmatch
    import json

    from rich.text import Text

    from irscope.model.errors import ArtifactError
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines
    from irscope.render.console import print_text
    from irscope.render.passes import timeline_view
    from irscope.model.serde import to_data

    try:
        found = timelines(read_dump(args.dump))
    except (ArtifactError, OSError) as exc:
        error(str(exc) if isinstance(exc, ArtifactError) else f"{args.dump}: {exc.strerror or exc}")
        return EXIT_USAGE
    chosen = [t for t in found if not args.kernel or fnmatch.fnmatch(t.kernel or "", args.kernel)]
    if not chosen:
        error(f"no kernel{' matching ' + args.kernel if args.kernel else ''} in {args.dump}")
        return EXIT_USAGE
    if args.json:
        write_stdout(json.dumps([to_data(t) for t in chosen], indent=1) + "\n")
        return EXIT_OK
    out = stdout_console()
    width = None if args.wide else out.width
    print_text(Text("\n\n").join(timeline_view(t, args.all, width) for t in chosen) + "\n", out)
    return EXIT_OK

