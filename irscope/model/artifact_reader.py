"""The one way irscope reads an artifact's bytes: open once, check the descriptor, read through it.

The harvest looks at each file with lstat and records its (device, inode); analysis comes later,
so the path may by then name something else (a link swapped in, a FIFO, another file). Every read
therefore opens the path with O_NOFOLLOW (a link is refused, not followed) and O_NONBLOCK (a FIFO
opens at once instead of waiting for a writer), fstat's the descriptor, and reads only a regular
file that is the one harvested, within the size limit (irscope/model/limits.py). Anything else is an
ArtifactError naming the file, so the kernel's other artifacts are still analyzed.

An artifact named by a saved report (untrusted: anyone may write one) is read only under a
directory the user named (the report's scan roots on this machine, or `--artifacts DIR`), never
through a linked directory, and only when its bytes match the digest the scan recorded.

Within one kernel's analysis (`one_read_each`) each artifact is read once: the resources, the
assembly, the rules and the line maps share the bytes, and their digest is what the report saves.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Iterator

from irscope.model.errors import ArtifactError
from irscope.model.limits import limit_for, max_file_size, too_large

if TYPE_CHECKING:
    from irscope.model.kernel import Artifact

OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
IS_A_LINK = "is a symbolic link: not followed (irscope reads a kernel's files only as the harvest found them)"
NOT_REGULAR = "not a regular file (a FIFO, socket or device): not read"
REPLACED = "replaced since it was harvested (another file now has its name): not read"
_CHUNK = 1 << 20

# path -> (bytes, digest) or the error its read raised; set only while one kernel is analyzed.
_reads: ContextVar[dict | None] = ContextVar("irscope_artifact_reads", default=None)


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def read_file(path: str, identity: tuple[int, int] | None = None, limit: int | None = None,
              what: str = "one artifact") -> bytes:
    """The bytes of the regular file `path`, opened once without following a link; ArtifactError
    when it is a link, no regular file, not the file of `identity` (device, inode), or too large.
    OSError when it cannot be opened at all (gone, no permission)."""
    limit = max_file_size() if limit is None else limit
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW's answer for a link as the last component
            raise ArtifactError(path, IS_A_LINK) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ArtifactError(path, NOT_REGULAR)
        if identity is not None and (st.st_dev, st.st_ino) != tuple(identity):
            raise ArtifactError(path, REPLACED)
        if st.st_size > limit:
            raise too_large(path, st.st_size, limit, what)
        chunks, total = [], 0
        while True:  # on past the stat'ed size: a file still growing is cut at the limit and rejected
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise too_large(path, None, limit, what)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_measurement(path: str, limit: int, what: str) -> bytes:
    """A profiler's file (Proton's profile, Nsight Compute's CSV) read as an artifact is: no link followed, at
    most `limit` bytes; ArtifactError, naming `what`, when it cannot be read at all."""
    try:
        return read_file(path, None, limit, what)
    except OSError as exc:
        raise ArtifactError(path, f"cannot read {what}: {exc.strerror or exc}") from None


def read_artifact(artifact: Artifact) -> tuple[bytes, str]:
    """(bytes, digest) of an artifact, read at most once per `one_read_each` scope; a failed read
    raises the same error each time it is asked for again in that scope."""
    memo = _reads.get()
    if memo is not None and artifact.path in memo:
        held = memo[artifact.path]
        if isinstance(held, BaseException):
            raise held
        return held
    try:
        data = _read_saved(artifact) if artifact.from_report else \
            read_file(artifact.opened or artifact.path, artifact.identity, *_limit(artifact))
    except (ArtifactError, OSError) as exc:
        if memo is not None:
            memo[artifact.path] = exc
        raise
    held = (data, artifact.digest if artifact.from_report else digest_of(data))
    if memo is not None:
        memo[artifact.path] = held
    return held


@contextmanager
def one_read_each() -> Iterator[dict[str, str]]:
    """Within the block, each artifact is read once; yields path -> digest of what was read
    (filled in as the block reads)."""
    memo: dict = {}
    digests: dict[str, str] = {}
    token = _reads.set(memo)
    try:
        yield digests
    finally:
        _reads.reset(token)
        digests.update({path: held[1] for path, held in memo.items() if isinstance(held, tuple)})


def _limit(artifact: Artifact) -> tuple[int, str]:
    """The artifact's stage's size limit, and how the error names it (irscope/model/limits.py)."""
    return limit_for(artifact.stage), f"one .{artifact.stage}"


def _read_saved(artifact: Artifact) -> bytes:
    """An artifact a loaded report names: only under the directory the user allowed, no link on the
    way (a linked parent directory leaves it), and only the bytes the scan recorded."""
    path, within = artifact.path, artifact.confined_to
    if within is None:
        raise ArtifactError(path, "not read: a saved report names it, and it is under none of the report's "
                                  "scan roots on this machine (--artifacts DIR names a copy of the cache)")
    if artifact.digest is None:
        raise ArtifactError(path, "not read: the report recorded no digest of it (saved by an older irscope, "
                                  "or never read by its scan), so its content cannot be checked")
    real, base = os.path.realpath(path), os.path.realpath(within)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise ArtifactError(path, f"not read: its real path leaves {within} (a linked directory?)")
    data = read_file(path, None, *_limit(artifact))
    if digest_of(data) != artifact.digest:
        raise ArtifactError(path, "not read: its content differs from what the report's scan read "
                                  "(its digest does not match)")
    return data
