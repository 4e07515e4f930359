"""An index of analysis results, so a re-scan of an unchanged cache reads instead of re-analyzing.

Each kernel's KernelReport is stored under a key made of the identity of every artifact it
was computed from, the kernel's directory as scanned, and a salt that changes with irscope's
version, the rules (their selection and their source) and the scan's options.

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
key and analyzed everything again. The index
lives in irscope's own cache directory — `$IRSCOPE_CACHE_DIR`, else
`$XDG_CACHE_HOME/irscope`, else `~/.cache/irscope` — never in the scanned tree: when that
directory lies under a scanned path (`irscope scan ~`) or holds one, the run uses no index
(`refusal` says why). Entries are
pickles of irscope's own frozen dataclasses, written atomically; one that cannot be read is
ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import tempfile
import time
from pathlib import Path
from typing import Sequence

from irscope import __version__
from irscope.model import Kernel, KernelReport
from irscope.parsers.errors import ArtifactError
from irscope.artifact_reader import read_file


# Two seconds: the coarsest timestamps in common use (FAT) tick every two seconds.
RACY_SECONDS = 2


def default_index_dir() -> Path:
    from irscope.home import irscope_home

    return irscope_home() / "index"


def refusal(directory: Path, roots: Sequence[str]) -> str | None:
    """Why the index in `directory` must not be used for a scan of `roots` (it lies under one of
    them, or holds one: its writes would land in a scanned tree), else None."""
    from irscope.outputs import overlapping_root

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
    # model and the parsers without a new version number.
    for package in _own_packages():
        for source in sorted(Path(package).glob("*.py")):
            try:
                stat = source.stat()
            except OSError:
                continue
            h.update(f"|{source.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    for rule in rules:
        h.update(f"|{rule.code}|{rule.__module__}.{rule.__qualname__}".encode())
        try:
            source = Path(inspect.getsourcefile(rule) or "")
            stat = source.stat()
            h.update(f"|{stat.st_size}|{stat.st_mtime_ns}".encode())
        except (OSError, TypeError):
            h.update(b"|?")
    return h.hexdigest()


def _own_packages() -> list[str]:
    import irscope
    import irscope.parsers
    import irscope.render

    return [p for package in (irscope, irscope.parsers, irscope.render) for p in package.__path__]


def _utf8(text: str) -> bytes:
    # A file name that is not UTF-8 reaches here with its bytes as lone surrogates (surrogateescape):
    # encoded as they are, so two such names still give two keys.
    return text.encode("utf-8", "surrogatepass")


class ResultIndex:
    def __init__(self, directory: Path | None = None, salt: str = "") -> None:
        self.directory = Path(directory) if directory else default_index_dir()
        self.salt = salt
        self.hits = self.misses = 0
        self._young: dict[str, tuple[str, ...]] = {}  # key -> its artifacts that were young when keyed

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
        return key

    @staticmethod
    def _digest(paths: Sequence[str]) -> str | None:
        """The bytes of `paths`, hashed; None when one is gone or over the size limit."""
        h = hashlib.blake2b(digest_size=20)
        for path in paths:
            try:
                h.update(read_file(path))  # no link followed, no FIFO waited on
            except (OSError, ArtifactError):
                return None
            h.update(b"\0")
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pickle"

    def holds(self, key: str | None) -> bool:
        """Whether a result is stored under `key` (it may still turn out unreadable: get says)."""
        return key is not None and os.path.exists(self._path(key))

    def get(self, key: str | None) -> KernelReport | None:
        if key is None:
            return None
        try:
            with open(self._path(key), "rb") as f:
                found = pickle.load(f)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            self.misses += 1
            return None
        # (the young artifacts' paths, their bytes' digest, the report); anything else is no entry
        if not (isinstance(found, tuple) and len(found) == 3 and isinstance(found[2], KernelReport)):
            self.misses += 1
            return None
        young, digest, report = found
        if young and (not isinstance(young, tuple) or self._digest(young) != digest):
            self.misses += 1  # stored while an artifact was young, and its bytes changed since
            return None
        self.hits += 1
        return report

    def put(self, key: str | None, report: KernelReport) -> None:
        if key is None:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as f:
                young = self._young.get(key, ())
                entry = (young, self._digest(young) if young else None, report)
                pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(f.name, path)
        except OSError:
            pass  # a read-only or full cache directory costs speed, not results
