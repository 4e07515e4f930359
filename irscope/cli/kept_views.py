"""`irscope scan DIR` run again on an unchanged cache: the kept output, printed before anything is
imported for a scan (irscope/pipeline/console_views.py says when a view is kept and why that is sound).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

# Before the parser: a command line whose output a view may hold names one of these as its command,
# and none of these flags (keepable() decides after the parse; this only spares the look-up).
VIEW_COMMANDS = ("scan",)
NEVER_KEPT = ("--no-cache", "--json", "--sarif", "--csv", "--parquet", "--markdown", "--tui", "--target", "--out",
              "--dump", "--debug", "--source", "--")


def replay(argv: list[str]) -> int | None:
    """Print the view kept for this very command line and return its exit status; None when there is
    none, or anything it was made from changed (the scan then runs as usual). Never raises."""
    if not argv or argv[0] not in VIEW_COMMANDS or any(a.split("=")[0] in NEVER_KEPT or a.endswith(".py")
                                                         for a in argv[1:]):
        return None
    try:
        return _replay(argv)
    except Exception:  # noqa: BLE001 - a view is only a shortcut: whatever goes wrong, the scan runs
        return None


def _replay(argv: list[str]) -> int | None:
    from irscope.model.paths import overlapping_root
    from irscope.pipeline.console_views import decode_view, invocation_key, safe
    from irscope.pipeline.home import default_cache_dir, irscope_home
    from irscope.pipeline.index_db import DATABASE, IndexDatabase

    directory = irscope_home() / "index"
    # The scan would use no index inside (or around) a path it reads, and writes nothing there: nor does this.
    read = [a for a in argv[1:] if os.path.exists(a)] or [str(default_cache_dir())]
    if any(overlapping_root(directory, [a]) or overlapping_root(a, [directory]) for a in read):
        return None
    if not os.path.isfile(directory / DATABASE):
        return None
    key = invocation_key(argv)
    db = IndexDatabase(directory, repair=False)
    try:
        payload = db.view(key)
        if payload is None:
            return None
        view = decode_view(payload)
        if not view.unchanged():
            return None
        db.used_view(key)
    finally:
        db.close()
    from irscope.render.closed_stdout import write_stdout

    write_stdout(safe(view.stdout))
    if view.stderr:
        sys.stderr.write(safe(view.stderr))
        sys.stderr.flush()
    return view.code


def keepable(args: argparse.Namespace) -> bool:
    """Whether this scan's output may be kept: the console its only output, the result index in use,
    every path a directory, no source roots (they map paths through the file system)."""
    from irscope.render.exports import source_roots

    if args.command_argv is None or args.no_cache or args.debug or args.tui or args.json:
        return False
    if any(getattr(args, name, None) for name in ("sarif", "csv", "parquet", "markdown", "target", "out", "dump")):
        return False
    if not all(os.path.isdir(p) for p in _roots(args)):
        return False
    from irscope.pipeline.home import irscope_home
    from irscope.pipeline.result_index import refusal

    if refusal(irscope_home() / "index", _roots(args)):
        return False  # the scan uses no index (it lies in a scanned path): nowhere to keep a view
    try:
        return not source_roots(args).configured
    except Exception:  # noqa: BLE001 - a bad [tool.irscope] source-roots is the scan's to report
        return False


class Keeper:
    """Watches a scan from before its harvest; when it is done, keeps its output if nothing changed."""

    def __init__(self, args: argparse.Namespace) -> None:
        from irscope.pipeline.console_views import code_and_config, watch

        self.argv = args.command_argv
        self.roots = [os.path.abspath(p) for p in _roots(args)]
        self.watched = watch(self.roots, code_and_config())
        self.out: list[str] = []
        self.err: list[str] = []
        self._saved: tuple | None = None

    def __enter__(self) -> "Keeper":
        """From here on, what reaches stdout and stderr is also recorded."""
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _Tee(sys.stdout, self.out.append)  # type: ignore[assignment]
        sys.stderr = _Tee(sys.stderr, self.err.append)  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self._saved

    def keep(self, code: int, rules: tuple[type, ...] = ()) -> None:
        """Store the output, unless anything watched changed while the scan ran, or is too young.
        `rules`: those the scan ran; the files of those from outside irscope are watched too."""
        from irscope.pipeline.console_views import KEEP_VIEWS, Watched, encode_view, identity, invocation_key
        from irscope.pipeline.home import irscope_home
        from irscope.pipeline.index_db import IndexDatabase
        from irscope.pipeline.result_index import refusal

        watched = self.watched
        if watched is None or not watched.unchanged() or not watched.settled():
            return
        # Rich (it draws the tables) and the plugin rules, as loaded now that the scan is done.
        extra = [m.__file__ for name, m in list(sys.modules.items())
                 if name.split(".")[0] == "rich" and getattr(m, "__file__", None)]
        extra += [_source_file(r) for r in rules if not r.__module__.startswith("irscope.")]
        watched = Watched({**watched.paths, **{p: identity(p) for p in sorted(set(extra))}}, watched.taken_ns)
        directory = irscope_home() / "index"
        if refusal(directory, self.roots):
            return
        db = IndexDatabase(directory)
        try:
            db.put_view(invocation_key(self.argv), encode_view(watched, "".join(self.out), "".join(self.err), code),
                        KEEP_VIEWS)
        finally:
            db.close()


def _roots(args: argparse.Namespace) -> list[str]:
    from irscope.pipeline.home import default_cache_dir

    return list(args.paths) or [str(default_cache_dir())]


def _source_file(rule: type) -> str:
    import inspect

    try:
        return inspect.getsourcefile(rule) or "?"
    except TypeError:
        return "?"


class _Tee:
    """A text stream that also hands each write to `record`; everything else is the stream's own."""

    def __init__(self, stream, record: Callable[[str], None]) -> None:
        self._stream, self._record = stream, record

    def write(self, text: str) -> int:
        self._record(text)
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
