"""The result index's file: one sqlite database, read as untrusted input.

Anyone who can write the index directory (a shared cache, a CI cache restored from another
branch) writes this file, so nothing in it may run code or stop a scan. It holds no pickles:
each entry is a KernelReport as JSON (irscope/model/serde.py), zlib-compressed, with a blake2b
checksum of the stored bytes that is checked before anything is decoded; an entry that fails
the checksum or does not decode to a report (whatever the exception: OverflowError,
MemoryError, RecursionError, ...) is a miss, and the scan's fresh result replaces it. The
checksum finds damage, not forgery: whoever can write the file can store any results, as a
hand-edited saved report could, but never make irscope run their code.

The database is opened with `trusted_schema=OFF` and `cell_size_check=ON`, and its schema
must be exactly the one irscope creates (no other table, no trigger or view); a file that is
not such a database (garbage, a link, a foreign schema) is set aside as `results.sqlite3.set-aside`
and a fresh one started, and a file sqlite finds corrupt mid-run likewise. Concurrent scans
share it through WAL mode and a busy timeout; a scan that cannot get the write lock in time
goes on without storing. Entries used least recently are evicted beyond
`$IRSCOPE_INDEX_MAX_SIZE` (default 256 MiB). Pickles of the old format (`??/<key>.pickle`)
are never read; `irscope cache clear` removes them with the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence
from urllib.parse import quote

if TYPE_CHECKING:
    from irscope.model.kernel import KernelReport


DATABASE = "results.sqlite3"
SET_ASIDE = DATABASE + ".set-aside"
ENV_MAX_SIZE = "IRSCOPE_INDEX_MAX_SIZE"
DEFAULT_MAX_SIZE = 256 << 20
# No entry is read past this, stored or decompressed (the largest real report is ~2 MB of JSON).
MAX_ENTRY = 64 << 20
KEEP_READ = 64 << 20
BUSY_SECONDS = 2.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY NOT NULL, used INTEGER NOT NULL, "
    "checksum BLOB NOT NULL, payload BLOB NOT NULL) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS entries_by_use ON entries (used)",
    # irscope/pipeline/console_views.py: a scan's console output, kept while nothing it was made from changed
    "CREATE TABLE IF NOT EXISTS views (key TEXT PRIMARY KEY NOT NULL, used INTEGER NOT NULL, "
    "checksum BLOB NOT NULL, payload BLOB NOT NULL) WITHOUT ROWID",
)
# sqlite's primary error codes that mean the file is not a sound database (SQLITE_CORRUPT,
# SQLITE_NOTADB), and those that mean another scan holds it (SQLITE_BUSY, SQLITE_LOCKED)
_DAMAGED = {11, 26}
_LOCKED = {5, 6}


def _primary_code(error: Exception) -> int | None:
    """sqlite's primary error code (an extended one such as SQLITE_CORRUPT_INDEX, 779, is 11 | 3 << 8)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _expected_schema() -> frozenset[tuple]:
    """sqlite_master's rows for irscope's schema, as this sqlite writes them."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in _SCHEMA:
            conn.execute(statement)
        return frozenset(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


_EXPECTED = _expected_schema()


def _now() -> int:
    """When an entry was stored or last read (nanoseconds): what least recently used means."""
    return time.time_ns()


class ForeignSchema(Exception):
    """The file is a database, but not one irscope made (or one someone added to)."""


def max_index_size() -> int:
    """The cap in bytes: IRSCOPE_INDEX_MAX_SIZE (`500M`, `2G`), else 256 MiB."""
    from irscope.model.limits import parse_size

    value = os.environ.get(ENV_MAX_SIZE)
    if value:
        try:
            return parse_size(value)
        except ValueError:
            pass  # a bad value falls back to the default; `irscope cache info` shows the cap in force
    return DEFAULT_MAX_SIZE


def encode_entry(young: Sequence[str], digest: str | None, report: KernelReport) -> bytes:
    # The model is imported here, not with this module: a kept console view is read without it.
    from irscope.model.serde import to_data

    # ensure_ascii: a non-UTF-8 file name's lone surrogates are written as \udcXX and read back as they were
    raw = json.dumps({"young": list(young), "digest": digest, "report": to_data(report)},
                     separators=(",", ":")).encode("ascii")
    packed = zlib.compress(raw, 1)
    return b"z" + packed if len(packed) < len(raw) else b"j" + raw


def decode_entry(payload: bytes) -> tuple[tuple[str, ...], str | None, KernelReport]:
    """An entry's (young artifacts, their digest, report); raises on anything else."""
    from irscope.model.kernel import KernelReport
    from irscope.model.serde import from_data, loads_bounded

    kind, body = payload[:1], payload[1:]
    if kind == b"z":
        inflate = zlib.decompressobj()
        raw = inflate.decompress(body, MAX_ENTRY)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("an entry larger than the limit, or cut short")
    elif kind == b"j":
        raw = body
    else:
        raise ValueError(f"unknown entry encoding {kind!r}")
    data = loads_bounded(raw)
    young, digest = data["young"], data["digest"]
    if not (isinstance(young, list) and all(isinstance(p, str) for p in young)):
        raise ValueError("young artifacts are not a list of paths")
    if not (digest is None or isinstance(digest, str)):
        raise ValueError("the digest is not a string")
    report = from_data(KernelReport, data["report"])
    if not isinstance(report, KernelReport):
        raise ValueError("not a kernel report")
    return tuple(young), digest, report


def checksum(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=16).digest()


def _connect(path: Path, read_only: bool = False) -> sqlite3.Connection:
    """Open `path` hardened for a hostile file and check its schema (creating it when empty);
    raises sqlite3.DatabaseError or ForeignSchema."""
    identity = _regular_files(path)
    uri = f"file:{quote(os.fsencode(path))}" + ("?mode=ro" if read_only else "")
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        now = _regular_files(path)  # a file made by this open, or the one checked before it
        if identity is not None and now != identity:
            raise ForeignSchema(f"{path} was replaced while it was opened")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_ENTRY + (1 << 20))
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.execute("PRAGMA cell_size_check=ON")
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
        schema = frozenset(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        if not schema <= _EXPECTED:
            raise ForeignSchema(f"{path} holds {sorted(r[:2] for r in schema - _EXPECTED)}")
        if schema != _EXPECTED and not read_only:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("COMMIT")
        if not read_only:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a power cut may lose the last entries, never the file
        return conn
    except BaseException:
        conn.close()
        raise


def _regular_files(path: Path) -> tuple[int, int] | None:
    """The database's (device, inode), None while there is none. sqlite follows links: a link
    planted as the database is refused (ForeignSchema, so it is set aside), and one planted as
    its -wal, -shm or -journal file (which sqlite would write through) is removed."""
    for suffix in ("-wal", "-shm", "-journal"):
        companion = f"{path}{suffix}"
        try:
            if not stat.S_ISREG(os.lstat(companion).st_mode):
                os.unlink(companion)
        except OSError:
            pass  # none (or a directory, which sqlite fails on: DatabaseError)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise ForeignSchema(f"{path} is not a regular file (a link, a directory, ...)")
    return st.st_dev, st.st_ino


class IndexDatabase:
    """The entries of one index directory. Opened on first use; every failure is a miss or an
    entry not stored, never an exception out of here."""

    def __init__(self, directory: Path, max_size: int | None = None,
                 say: Callable[[str], None] | None = None, repair: bool = True) -> None:
        self.directory = directory
        # False: a file that is not a sound index is left as it is, for the scan to set aside and say so
        # (a kept view is looked up before the scan: irscope/cli/kept_views.py).
        self.repair = repair
        self.path = directory / DATABASE
        self.max_size = max_index_size() if max_size is None else max_size
        self.say = say or (lambda message: None)
        self._conn: sqlite3.Connection | None = None
        self._unusable = False  # no database this run (a directory that cannot be written, ...)
        self._writable = True  # cleared when another scan held the lock too long, or the disk is full
        self._recovered = False
        self._read: list[str] = []  # keys read this run: their `used` is brought up to date on close
        # Entries read or stored this run: should the file turn out damaged, they go into the fresh one
        # (up to KEEP_READ bytes in all).
        self._held: dict[str, tuple[bytes, bytes]] = {}
        self._kept = 0
        self.stored = 0

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._unusable:
            return self._conn
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            self._unusable = True
            return None
        for attempt in range(2):
            try:
                self._conn = _connect(self.path)
                return self._conn
            except (sqlite3.DatabaseError, ForeignSchema) as e:
                if attempt == 0 and self.repair and _primary_code(e) not in _LOCKED and self._set_aside(e):
                    continue
                self._unusable = True
                return None
        return None

    def _set_aside(self, why: Exception) -> bool:
        """Move a file that is not irscope's sound database out of the way (kept once, to look at)."""
        try:
            os.replace(self.path, self.directory / SET_ASIDE)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        for suffix in ("-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except OSError:
                pass
        self.say(f"the result index {self.path} is not a sound irscope index ({str(why)[:200]}): set aside as "
                 f"{SET_ASIDE}, a fresh one is started")
        return True

    def _failed(self, error: sqlite3.DatabaseError) -> None:
        """A statement failed: a damaged file is set aside once and a fresh one started; a lock held
        by another scan past the timeout, a full disk or a read-only directory stop the storing."""
        code = _primary_code(error)
        if code in _DAMAGED and not self._recovered and self.repair:
            self._recovered = True
            self._drop()
            if self._set_aside(error) and self._restore():
                return
        if code in _DAMAGED:
            self._drop()
            self._unusable = True
        self._writable = False

    def _restore(self) -> bool:
        """Into the fresh file, what this run read from the damaged one or stored in it."""
        conn = self._connection()
        if conn is None:
            return False
        now = _now()
        try:
            with _transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO entries (key, used, checksum, payload) VALUES (?, ?, ?, ?)",
                                 [(key, now, *entry) for key, entry in self._held.items()])
        except sqlite3.DatabaseError:
            return False
        self._read.clear()  # their times are now
        return True

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def holds(self, key: str) -> bool:
        conn = self._connection()
        if conn is None:
            return False
        try:
            return conn.execute("SELECT 1 FROM entries WHERE key = ?", (key,)).fetchone() is not None
        except sqlite3.DatabaseError as e:
            self._failed(e)
            return False

    def _payload(self, table: str, key: str) -> tuple[bytes, bytes] | None:
        """(checksum, payload) of `key` in `table` ("entries" or "views"), the checksum checked; else None."""
        conn = self._connection()
        if conn is None:
            return None
        try:
            row = conn.execute(f"SELECT checksum, CASE WHEN length(payload) <= ? THEN payload END FROM {table} "
                               "WHERE key = ?", (MAX_ENTRY, key)).fetchone()
        except sqlite3.DatabaseError as e:
            self._failed(e)
            return None
        if row is None or not isinstance(row[1], bytes) or row[0] != checksum(row[1]):
            return None
        return row

    def get(self, key: str) -> tuple[tuple[str, ...], str | None, KernelReport] | None:
        row = self._payload("entries", key)
        if row is None:
            return None
        try:
            found = decode_entry(row[1])
        except Exception:  # noqa: BLE001 - whatever a damaged entry raises, it is a miss
            return None
        self._read.append(key)
        self._keep(key, row[0], row[1])
        return found

    def _keep(self, key: str, checksum: bytes, payload: bytes) -> None:
        if self._kept + len(payload) <= KEEP_READ:
            self._kept += len(payload)
            self._held[key] = (checksum, payload)

    def put(self, key: str, young: Sequence[str], digest: str | None, report: KernelReport) -> None:
        if not self._writable:
            return
        try:
            payload = encode_entry(young, digest, report)
        except (ValueError, TypeError, OverflowError, RecursionError):
            return  # a report JSON cannot hold is analyzed again next time
        conn = self._connection()
        if conn is None or len(payload) > MAX_ENTRY:
            return
        try:
            conn.execute("INSERT OR REPLACE INTO entries (key, used, checksum, payload) VALUES (?, ?, ?, ?)",
                         (key, _now(), checksum(payload), payload))
            self.stored += 1
            self._keep(key, checksum(payload), payload)
        except sqlite3.DatabaseError as e:
            self._failed(e)
            if self._conn is not None and self._writable:
                self.put(key, young, digest, report)  # once more, into the fresh file

    def view(self, key: str) -> bytes | None:
        """A kept console view's payload, its checksum checked; None when there is none (or no database)."""
        row = self._payload("views", key)
        return None if row is None else row[1]

    def used_view(self, key: str) -> None:
        self._write("UPDATE views SET used = ? WHERE key = ?", (_now(), key))

    def put_view(self, key: str, payload: bytes, keep: int) -> None:
        """Keep a console view (and only the `keep` most recently used ones)."""
        if len(payload) <= MAX_ENTRY and self._write(
                "INSERT OR REPLACE INTO views (key, used, checksum, payload) VALUES (?, ?, ?, ?)",
                (key, _now(), checksum(payload), payload)):
            self._write("DELETE FROM views WHERE key NOT IN (SELECT key FROM views ORDER BY used DESC LIMIT ?)",
                        (keep,))

    def _write(self, statement: str, values: tuple) -> bool:
        conn = self._connection() if self._writable else None
        if conn is None:
            return False
        try:
            conn.execute(statement, values)
            return True
        except sqlite3.DatabaseError as e:
            self._failed(e)
            return False

    def close(self) -> None:
        """Bring the used entries' times up to date, evict beyond the cap, let go of the file."""
        try:
            if self._conn is not None and self._writable and self._read:
                now = _now()
                with _transaction(self._conn):
                    self._conn.executemany("UPDATE entries SET used = ? WHERE key = ?",
                                           [(now, key) for key in self._read])
            if self._conn is not None and self._writable:
                evict(self._conn, self.max_size)
        except sqlite3.DatabaseError as e:
            self._failed(e)  # locked: the times and the cap wait for the next run; damaged: set aside
        finally:
            self._read.clear()
            self._held.clear()
            self._kept = 0
            self._drop()


class _transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, *rest: Any) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


def evict(conn: sqlite3.Connection, max_size: int) -> int:
    """Delete the least recently used entries while the database's pages in use exceed
    `max_size`, down to 90% of it (so that not every run evicts); how many were deleted. Each
    round deletes as many entries as the pages in use per entry say, then measures again."""
    deleted, target = 0, max_size - max_size // 10
    while True:
        in_use = _bytes_in_use(conn)
        count = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        if in_use <= (max_size if deleted == 0 else target) or count == 0:
            return deleted
        batch = max(1, (in_use - target) * count // in_use)
        victims = conn.execute("SELECT key FROM entries ORDER BY used, key LIMIT ?", (batch,)).fetchall()
        with _transaction(conn):
            conn.executemany("DELETE FROM entries WHERE key = ?", victims)
        deleted += len(victims)


def _bytes_in_use(conn: sqlite3.Connection) -> int:
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return (pages - free) * page_size


def _files(directory: Path) -> list[Path]:
    """Every file of the index: the database and its companions, and old-format pickles."""
    found = [directory / f"{DATABASE}{suffix}" for suffix in ("", "-wal", "-shm", "-journal")]
    found.append(directory / SET_ASIDE)
    try:
        subdirectories = [d for d in os.scandir(directory)
                          if d.is_dir(follow_symlinks=False) and len(d.name) == 2 and _hex(d.name)]
    except OSError:
        subdirectories = []
    for sub in subdirectories:
        try:
            found += [Path(f.path) for f in os.scandir(sub.path) if f.name.endswith((".pickle", ".tmp"))]
        except OSError:
            pass
    return [p for p in found if os.path.lexists(p)]


def _hex(name: str) -> bool:
    return all(c in "0123456789abcdef" for c in name)


def index_info(directory: Path) -> dict[str, Any]:
    """Where the index is, its entries and size, the cap, and what else lies there."""
    files = _files(directory)
    size = sum(os.lstat(p).st_size for p in files if os.path.lexists(p))
    entries: int | None = 0
    problem = None
    if (directory / DATABASE).exists():
        try:
            conn = _connect(directory / DATABASE, read_only=True)
            try:
                entries = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            finally:
                conn.close()
        except (sqlite3.DatabaseError, ForeignSchema) as e:
            entries, problem = None, f"not a sound irscope index ({str(e)[:200]}): the next scan sets it aside"
    return {"directory": str(directory), "database": str(directory / DATABASE), "entries": entries,
            "size": size, "max_size": max_index_size(),
            "old_entries": sum(p.name.endswith(".pickle") for p in files), "problem": problem}


def clear_index(directory: Path) -> tuple[int, int]:
    """Remove the index's files (never anything else in the directory); (files, bytes) removed."""
    removed = freed = 0
    for path in _files(directory):
        try:
            size = os.lstat(path).st_size
            os.unlink(path)
        except OSError:
            continue
        removed += 1
        freed += size
    for sub in directory.glob("??"):
        if _hex(sub.name) and sub.is_dir() and not sub.is_symlink():
            try:
                sub.rmdir()  # only when empty
            except OSError:
                pass
    return removed, freed
