"""A re-scan of an unchanged cache prints what the last identical scan printed, checked by stat alone.

`irscope scan DIR` with the console as its only output is a pure function of: the command line, the
working directory, the environment, the terminal, irscope's code and its rules, `[tool.irscope]`,
and every file and directory under DIR. When such a scan ends with all of those unchanged since it
began, its output (stdout, stderr, exit status) is kept in the result index's database beside the
results, under a key made of the first four, with the identities (`lstat`: mode, size, inode,
mtime and ctime in nanoseconds) of every path the rest is read from. The next identical command
(irscope/cli/main.py asks before it even builds its parser) lstats those paths, and when every one
is as it was, prints the kept output: no harvest, no result decoded, no rule imported. Anything
else (one file touched, a terminal of another width, another option) runs the scan as before.

Why identities are enough is the result index's reasoning (irscope/pipeline/result_index.py): Triton
writes a file and renames it, which gives a new inode and ctime; a view is kept only when nothing it
watches is younger than RACY_SECONDS, so a later change cannot share a watched path's ctime.
Conservative on purpose: a scan that meets a symbolic link, a file Triton is writing, source roots
or any output file is never kept. The kept text is untrusted input like every index entry: it is
checksummed, size-bounded, and every control sequence but colour (SGR) is removed before printing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import time
import zlib
from typing import Iterable

from irscope.model.version import __version__

VIEW_FORMAT = 1
RACY_SECONDS = 2  # the result index's rule (kept apart so that this module imports no model)
MAX_VIEW = 64 << 20  # stored bytes of one view, and of its inflated JSON
KEEP_VIEWS = 32  # views beyond this many, least recently used first, are dropped
# Paths a view may watch: a Triton cache of 10,000 kernels has ~80,000. A scan of a tree of millions
# of other files (`irscope scan /`) is not kept: watching it would cost more than the scan saves.
MAX_WATCHED = 250_000
# What a shell changes from one command to the next without changing what irscope prints.
_VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "SECONDS", "SSH_CLIENT", "SSH_CONNECTION", "WINDOWID",
                           "TMUX_PANE", "XDG_SESSION_ID", "INVOCATION_ID", "JOURNAL_STREAM"})
# Colour (SGR) is what a kept terminal view may hold; any other escape, and C0/C1 controls but
# tab and newline, is dropped: the database is anyone's who can write the index directory.
_UNSAFE = re.compile("\x1b(?!\\[[0-9;]*m)|[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]")

Identity = tuple[int, int, int, int, int]


def identity(path: str) -> Identity | None:
    """What lstat says of `path`: (mode, size, inode, mtime ns, ctime ns); None when it is absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_mode, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def invocation_key(argv: Iterable[str]) -> str:
    """The command line, the working directory, the environment and the terminal, hashed."""
    env = sorted((k, v) for k, v in os.environ.items() if k not in _VOLATILE_ENV)
    terminal = []
    for fd in (0, 1, 2):  # rich sizes the console from the first of these that is a terminal
        try:
            terminal.append([os.isatty(fd), *os.get_terminal_size(fd)])
        except OSError:
            terminal.append([False])
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = "?"
    text = json.dumps([VIEW_FORMAT, __version__, sys.executable, sys.version, list(argv), cwd, env, terminal],
                      ensure_ascii=True)
    return hashlib.blake2b(text.encode("ascii"), digest_size=20).hexdigest()


class Watched:
    """The identities of the paths a scan's output is read from, taken before it ran."""
    # Plain classes here, not dataclasses: this module is imported on the path that replays a view,
    # where each dataclass's generated methods cost their compile time (about 2 ms a class).
    __slots__ = ("paths", "taken_ns")

    def __init__(self, paths: dict[str, Identity | None], taken_ns: int | None = None) -> None:
        self.paths = paths
        self.taken_ns = time.time_ns() if taken_ns is None else taken_ns

    def unchanged(self) -> bool:
        return all(identity(p) == i for p, i in self.paths.items())

    def settled(self) -> bool:
        """Nothing watched was so young, when the scan began, that a change could share its timestamps."""
        recent = self.taken_ns - RACY_SECONDS * 1_000_000_000
        return all(i is None or max(i[3], i[4]) <= recent for i in self.paths.values())


def watch(roots: Iterable[str], code_and_config: Iterable[str]) -> Watched | None:
    """Every directory and file under `roots`, and `code_and_config`; None when the trees hold what
    rules a kept view out (a link, a file or directory Triton is writing, one that cannot be read)."""
    from irscope.pipeline.harvester import IN_PROGRESS

    paths: dict[str, Identity | None] = {}
    taken = time.time_ns()
    for root in roots:
        root_id = identity(root)
        if root_id is None or not stat.S_ISDIR(root_id[0]):
            return None
        paths[root] = root_id
        stack = [root]
        while stack:
            directory = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                return None
            for entry in entries:
                if IN_PROGRESS.search(entry.name) or len(paths) >= MAX_WATCHED:
                    return None
                path = entry.path
                found = identity(path)
                if found is None or stat.S_ISLNK(found[0]):
                    return None
                paths[path] = found
                if stat.S_ISDIR(found[0]):
                    stack.append(path)
    for path in code_and_config:
        paths[path] = identity(path)
    return Watched(paths, taken)


def code_and_config(extra: Iterable[str] = ()) -> list[str]:
    """What besides the scanned trees decides the output: irscope's code (as the result index salts
    it), sys.path's folders (a rule plugin installed), `extra`, and each pyproject.toml from the
    working directory up ([tool.irscope])."""
    from irscope.pipeline.result_index import salted_sources

    found = list(salted_sources())
    found += [p for p in sys.path if p and os.path.isdir(p)]
    found += list(extra)
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        return found
    while True:
        found.append(os.path.join(here, "pyproject.toml"))
        parent = os.path.dirname(here)
        if parent == here:
            return found
        here = parent


def encode_view(watched: Watched, stdout: str, stderr: str, code: int) -> bytes:
    # Grouped by folder, each file as [name, mode, size, inode, mtime, ctime]: a third of the bytes of
    # whole paths, and one list to compare per file when the view is checked.
    folders: dict[str, list] = {}
    for path, found in watched.paths.items():
        folder, name = os.path.split(path)
        folders.setdefault(folder, []).append([name, *found] if found is not None else [name])
    raw = json.dumps({"format": VIEW_FORMAT, "folders": list(folders.items()), "stdout": stdout, "stderr": stderr,
                      "code": code}, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return zlib.compress(raw, 1)


class View:
    """A kept view: the folders watched (`[[folder, [[name, mode, size, inode, mtime, ctime] or [name]
    when it was absent, ...]], ...]`) and the output."""
    __slots__ = ("folders", "stdout", "stderr", "code")

    def __init__(self, folders: list, stdout: str, stderr: str, code: int) -> None:
        self.folders, self.stdout, self.stderr, self.code = folders, stdout, stderr, code

    def unchanged(self) -> bool:
        """Every watched path is as it was. The stored values are compared as they are: whatever a forged
        entry holds in their place (strings, floats, more fields) differs from what lstat says."""
        lstat, join = os.lstat, os.path.join
        for folder, files in self.folders:
            for entry in files:
                try:
                    st = lstat(join(folder, entry[0]))
                except FileNotFoundError:
                    if len(entry) != 1:
                        return False
                    continue
                if entry[1:] != [st.st_mode, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]:
                    return False
        return True


def decode_view(payload: bytes) -> View:
    """A kept view; raises (ValueError, TypeError, ...) on anything that is not one."""
    inflate = zlib.decompressobj()
    raw = inflate.decompress(payload, MAX_VIEW)
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError("a view larger than the limit, or cut short")
    data = json.loads(raw)
    if data.get("format") != VIEW_FORMAT:
        raise ValueError("another view format")
    folders, out, err, code = data["folders"], data["stdout"], data["stderr"], data["code"]
    if not (isinstance(out, str) and isinstance(err, str) and type(code) is int and 0 <= code < 256):
        raise ValueError("not a view")
    if not all(type(f) is list and len(f) == 2 and type(f[0]) is str and type(f[1]) is list
               and all(type(e) is list and e and type(e[0]) is str for e in f[1]) for f in folders):
        raise ValueError("not a list of watched folders")
    return View(folders, out, err, code)


def safe(text: str) -> str:
    """Kept text as it may reach a terminal: colour kept, every other escape and control removed."""
    return _UNSAFE.sub("", text)
