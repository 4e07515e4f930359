"""An index of analysis results, so a re-scan of an unchanged cache reads instead of re-analyzing.

Each kernel's KernelReport is stored under a key made of the identity of every artifact it
was computed from, the kernel's directory as scanned, and a salt that changes with irscope's
version, its code (the model, parsers, renderers and rules, helpers included), the rules
selected and the scan's options.

An artifact's identity is what `stat` says of it — size, inode, mtime and ctime in
nanoseconds — the way git's index and make decide a file is unchanged: reading and hashing
every artifact (a 1,000-kernel cache holds ~400 MB, most of it LLVM IR) cost more than a
warm scan may take. Triton never edits a cache file in place; it writes a temporary file
and renames it, which gives a new inode and ctime. A file changed so soon after it was
written that the change could share its timestamps (a filesystem with coarse times) is not
trusted on its timestamps alone: an entry stored while an artifact was younger than
RACY_SECONDS also holds a digest of that artifact's bytes, checked again when it is read (git's
"racily clean" entries). The key itself is the stat identity alone: had the young bytes gone
into the key, a re-scan two seconds later, the same files no longer young, looked for another
key and analyzed everything again.

The index lives in irscope's own cache directory — `$IRSCOPE_CACHE_DIR`, else
`$XDG_CACHE_HOME/irscope`, else `~/.cache/irscope`, in `index/` — never in the scanned tree:
when that directory lies under a scanned path (`irscope scan ~`) or holds one, the run uses no
index (`refusal` says why). Its entries are kept by irscope/pipeline/index_db.py: one sqlite database,
each report as checksummed JSON, treated as untrusted input (a shared or restored CI cache).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from irscope.model.version import __version__
from irscope.pipeline.index_db import IndexDatabase, clear_index, index_info  # noqa: F401  (the CLI's cache command)
from irscope.model.kernel import Kernel, KernelReport
from irscope.model.errors import ArtifactError
from irscope.model.artifact_reader import read_file


# Two seconds: the coarsest timestamps in common use (FAT) tick every two seconds.
RACY_SECONDS = 2


def default_index_dir() -> Path:
    from irscope.pipeline.home import irscope_home

    return irscope_home() / "index"


def refusal(directory: Path, roots: Sequence[str]) -> str | None:
    """Why the index in `directory` must not be used for a scan of `roots` (it lies under one of
    them, or holds one: its writes would land in a scanned tree), else None."""
    from irscope.model.paths import overlapping_root

    for root in roots:
        if overlapping_root(directory, [root]) or overlapping_root(root, [directory]):
            return (f"the result index {directory} lies inside the scanned path {root} (or holds it): this run "
                    "uses no index, to write nothing there; set IRSCOPE_CACHE_DIR to a directory outside it")
    return None


def salt_for(rules: Sequence[type], options: str = "") -> str:
    """What, besides the artifacts, decides a kernel's results."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__}|{options}".encode())
    # irscope's own code, by its files' sizes and times: a development install changes the
    # model, the parsers and a rule's helpers without a new version number.
    for source in salted_sources():
        try:
            stat = os.stat(source)
        except OSError:
            continue
        h.update(_utf8(f"|{source}|{stat.st_size}|{stat.st_mtime_ns}"))
    # A rule from outside irscope (a plugin) by its own file.
    for rule in rules:
        h.update(f"|{rule.code}|{rule.__module__}.{rule.__qualname__}".encode())
        try:
            stat = Path(inspect.getsourcefile(rule) or "").stat()
            h.update(f"|{stat.st_size}|{stat.st_mtime_ns}".encode())
        except (OSError, TypeError):
            h.update(b"|?")
    return h.hexdigest()


@lru_cache(maxsize=1)
def salted_sources() -> tuple[str, ...]:
    """Every file of irscope's code that can change a result: each .py (and the MLIR grammar) of
    irscope and its subpackages, irscope.parsers and irscope.rules. The TUI only shows results.
    Listed once a process (a scan's salt and its kept view both ask; each stats the files itself)."""
    import irscope.parsers
    import irscope.rules

    # irscope's own folder is this module's grandparent (importing the irscope face here would be circular).
    folders = [str(Path(__file__).parent.parent), *irscope.parsers.__path__, *irscope.rules.__path__]
    found = []
    for directory in folders:  # irscope's own subpackages, render included
        found += sorted(str(p) for pattern in ("*.py", "*.lark") for p in Path(directory).rglob(pattern)
                        if "__pycache__" not in p.parts and Path(directory, "tui") not in p.parents)
    return tuple(found)


def _utf8(text: str) -> bytes:
    # A file name that is not UTF-8 reaches here with its bytes as lone surrogates (surrogateescape):
    # encoded as they are, so two such names still give two keys.
    return text.encode("utf-8", "surrogatepass")


class ResultIndex:
    """The scan's view of the index: keys kernels, checks young artifacts' digests, counts hits."""

    def __init__(self, directory: Path | None = None, salt: str = "", max_size: int | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.directory = Path(directory) if directory else default_index_dir()
        self.salt = salt
        self.hits = self.misses = 0
        self._young: dict[str, tuple[str, ...]] = {}  # key -> its artifacts that were young when keyed
        self._artifacts: dict[str, frozenset[str]] = {}  # key -> its kernel's artifacts' paths
        self.db = IndexDatabase(self.directory, max_size, say)

    def key(self, kernel: Kernel, extra: str = "") -> str | None:
        """The kernel's key from its artifacts' identities; None when one cannot be read. The
        artifacts young enough to share timestamps with a change are remembered for put/get."""
        h = hashlib.blake2b(digest_size=20)
        h.update(_utf8(f"{self.salt}|{kernel.directory}|{kernel.key}|{extra}"))
        recent = time.time_ns() - RACY_SECONDS * 1_000_000_000
        young = []
        for artifact in kernel.artifacts:
            try:
                st = os.stat(artifact.path)
            except OSError:
                return None
            h.update(_utf8(f"|{artifact.stage}|{artifact.path}|{st.st_size}|{st.st_ino}|{st.st_mtime_ns}|"
                           f"{st.st_ctime_ns}"))
            if max(st.st_mtime_ns, st.st_ctime_ns) > recent:
                young.append(artifact.path)
        key = h.hexdigest()
        self._young[key] = tuple(young)
        self._artifacts[key] = frozenset(a.path for a in kernel.artifacts)
        return key

    @staticmethod
    def _digest(paths: Sequence[str]) -> str | None:
        """The bytes of `paths`, hashed; None when one is gone or over the size limit."""
        h = hashlib.blake2b(digest_size=20)
        for path in paths:
            try:
                h.update(read_file(path))  # no link followed, no FIFO waited on
            except (OSError, ArtifactError, ValueError):  # ValueError: a NUL or lone surrogate in a path
                return None
            h.update(b"\0")
        return h.hexdigest()

    def holds(self, key: str | None) -> bool:
        """Whether a result is stored under `key` (it may still turn out unreadable: get says)."""
        return key is not None and self.db.holds(key)

    def get(self, key: str | None) -> KernelReport | None:
        """The stored report, or None (a miss) when there is none, or it is damaged or forged in a
        way that shows (bad checksum, not a report), or its young artifacts' bytes changed."""
        found = self.db.get(key) if key is not None else None
        if found is None:
            self.misses += 1
            return None
        young, digest, report = found
        if not self._artifacts.get(key, frozenset()).issuperset(young):
            self.misses += 1  # an entry may only name its own kernel's artifacts to be read again
            return None
        if young and self._digest(young) != digest:
            self.misses += 1  # stored while an artifact was young, and its bytes changed since
            return None
        self.hits += 1
        return report

    def put(self, key: str | None, report: KernelReport) -> None:
        if key is None:
            return
        young = self._young.get(key, ())
        self.db.put(key, young, self._digest(young) if young else None, report)

    def close(self) -> None:
        """Record which entries this run used (for the size cap's eviction), evict, let go of the file."""
        self.db.close()
