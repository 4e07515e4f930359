"""A hostile or damaged result index (issue 22, items 2 and 23).

Anyone who can write IRSCOPE_CACHE_DIR (a shared cache, a CI cache restored from another branch)
writes the index. These tests put hand-made malformed and hostile files there — a pickle whose
__reduce__ writes a marker file where the old format lived, a database with a trigger or a view, garbage
bytes, a flipped bit, entries with a valid checksum that decode to huge or deep structures — and
check that every scan exits 0 with the results of a scan without the index, that nothing runs, and
that the bad entry is analyzed again and rewritten. Also: the salt follows the rules' helpers, the
size cap evicts the least recently used entries, a locked database costs only the storing, and
`irscope cache clear` empties the index.
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import zlib
from pathlib import Path

import pytest
from conftest import FIXTURES

import irscope.pipeline.index_db as index_db
import irscope.pipeline.analyze as pipeline
import irscope.pipeline.result_index as result_index
from irscope.cli.main import main
from irscope.pipeline.analyze import ScanRun, scan
from irscope.model.serde import to_data

# Three kernels of a real cache: softmax, add and a split-K GEMM.
KERNELS = ("3UDH2JXEG2RRLHOC77UVBLFWN27SYNGKNR5CAUTIJPQCOC2LKBAA",
           "54QUJ3WC4AB5H4IOMXTFX2SJN3PIEXELAMDSEWQ55G4XSCG64IXQ",
           "5I4DURYQ6THQR4N76PZTBX7CYLQH3LWOWGH3YEU2QABGR2RVTB3A")


@pytest.fixture
def cache(tmp_path) -> Path:
    import shutil

    for name in KERNELS:
        shutil.copytree(FIXTURES / "caches" / "triton-3.9" / name, tmp_path / "cache" / name)
    return tmp_path / "cache"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """IRSCOPE_CACHE_DIR for this test; the index is home / "index"."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def analyzed(monkeypatch) -> list[str]:
    """The kernels analyzed (not read from the index) by scans with -j 1 in this process."""
    seen: list[str] = []
    real = pipeline.analyze_kernel
    monkeypatch.setattr(pipeline, "analyze_kernel", lambda k, *a, **kw: seen.append(k.key) or real(k, *a, **kw))
    return seen


def scan_json(capsys, cache: Path, *extra: str) -> list:
    """`irscope scan CACHE --json - -j 1`: exit 0, and the kernels as JSON (`created` left out)."""
    code = main(["scan", str(cache), "--json", "-", "-j", "1", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "internal error" not in out.err and "Traceback" not in out.err
    return json.loads(out.out)["kernels"]


def entries(home: Path) -> dict[str, bytes]:
    with sqlite3.connect(home / "index" / index_db.DATABASE) as db:
        found = dict(db.execute("SELECT key, payload FROM entries"))
    db.close()
    return found


def store(home: Path, payloads: dict[str, bytes]) -> None:
    """Write payloads with valid checksums, as a forger who read the format would."""
    with sqlite3.connect(home / "index" / index_db.DATABASE) as db:
        for key, payload in payloads.items():
            db.execute("UPDATE entries SET payload = ?, checksum = ? WHERE key = ?",
                       (payload, index_db.checksum(payload), key))
    db.close()


class WritesMarker:
    """A hostile pickle: unpickling it writes a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "pickle ran code"))


def test_hostile_pickle_where_the_old_format_lived_never_runs(cache, home, tmp_path, capsys):
    clean = scan_json(capsys, cache, "--no-cache")
    marker = tmp_path / "marker"
    keys = [k for k in ScanRun(cache, index=home / "index", jobs=1).keys.values() if k]
    assert len(keys) == len(KERNELS)
    for key in keys:  # the old layout: index/<key[:2]>/<key>.pickle
        (home / "index" / key[:2]).mkdir(parents=True, exist_ok=True)
        (home / "index" / key[:2] / f"{key}.pickle").write_bytes(pickle.dumps(WritesMarker(marker)))
    assert scan_json(capsys, cache) == clean
    assert scan_json(capsys, cache) == clean  # a warm scan
    assert not marker.exists()
    assert main(["cache", "info"]) == 0
    assert f"old entries   {len(keys)} pickles" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert not list((home / "index").rglob("*.pickle")) and not (home / "index" / index_db.DATABASE).exists()
    assert not marker.exists()


@pytest.mark.parametrize("hostile", [
    "CREATE TRIGGER stolen AFTER INSERT ON entries BEGIN INSERT INTO pwned VALUES (new.key); END",
    "CREATE TRIGGER stolen BEFORE UPDATE ON entries BEGIN INSERT INTO pwned VALUES (old.key); END",
    "CREATE VIEW pwned_view AS SELECT key FROM entries",
])
def test_hostile_schema_is_set_aside_and_nothing_in_it_runs(cache, home, capsys, analyzed, hostile):
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    with sqlite3.connect(home / "index" / index_db.DATABASE) as db:
        db.execute("CREATE TABLE pwned (key TEXT)")
        db.execute(hostile)
    db.close()
    analyzed.clear()
    code = main(["scan", str(cache), "--json", "-", "-j", "1"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["kernels"] == clean
    assert "set aside" in out.err and "internal error" not in out.err
    assert len(analyzed) == len(KERNELS)  # a fresh index: every kernel analyzed and stored again
    with sqlite3.connect(home / "index" / index_db.SET_ASIDE) as db:
        assert db.execute("SELECT count(*) FROM pwned").fetchone() == (0,)  # the trigger never fired
    db.close()
    with sqlite3.connect(home / "index" / index_db.DATABASE) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        assert names == {"entries", "entries_by_use", "views"}
    db.close()
    analyzed.clear()
    assert scan_json(capsys, cache) == clean and analyzed == []  # and the fresh index serves the next scan


@pytest.mark.parametrize("damage", ["garbage", "truncated", "zeroed-page"])
def test_damaged_database_file_gives_a_fresh_index(cache, home, capsys, analyzed, damage):
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    path = home / "index" / index_db.DATABASE
    data = path.read_bytes()
    damaged = {"garbage": os.urandom(len(data)), "truncated": data[: len(data) // 3],
               "zeroed-page": data[:4096] + bytes(4096) + data[8192:]}[damage]
    path.write_bytes(damaged)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    analyzed.clear()
    assert scan_json(capsys, cache) == clean
    assert analyzed  # at least the entries the damage reached were analyzed again
    analyzed.clear()
    assert scan_json(capsys, cache) == clean and analyzed == []  # and are held again


def test_a_flipped_bit_in_every_payload_is_a_miss_and_rewritten(cache, home, capsys, analyzed):
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    stored = entries(home)
    with sqlite3.connect(home / "index" / index_db.DATABASE) as db:
        for key, payload in stored.items():
            at = len(payload) // 2
            db.execute("UPDATE entries SET payload = ? WHERE key = ?",
                       (payload[:at] + bytes([payload[at] ^ 0x10]) + payload[at + 1:], key))
    db.close()
    analyzed.clear()
    assert scan_json(capsys, cache) == clean
    assert len(analyzed) == len(KERNELS)
    assert entries(home) == stored  # rewritten as they were
    analyzed.clear()
    assert scan_json(capsys, cache) == clean and analyzed == []


def _packed(raw: bytes) -> bytes:
    return b"z" + zlib.compress(raw, 9)


HOSTILE_PAYLOADS = {
    "deep": _packed(b"[" * 200_000 + b"]" * 200_000),
    "deep-in-report": None,  # the real entry with its report nested 100,000 lists deep in one field
    "bomb": _packed(b" " * (index_db.MAX_ENTRY + 1)),  # more than the limit once inflated
    "huge-int": _packed(b'{"young":[],"digest":null,"report":' + b"9" * 100_000 + b"}"),
    "wrong-shape": _packed(b'{"young":[1],"digest":{},"report":[]}'),
    "not-zlib": b"z" + os.urandom(64),
    "unknown-codec": b"p" + pickle.dumps(WritesMarker(Path("/nonexistent/marker"))),
    "empty": b"",
}


@pytest.mark.parametrize("kind", list(HOSTILE_PAYLOADS))
def test_hostile_entry_with_a_valid_checksum_is_a_miss_and_rewritten(cache, home, capsys, analyzed, kind):
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    stored = entries(home)
    payloads = {}
    for key, payload in stored.items():
        hostile = HOSTILE_PAYLOADS[kind]
        if hostile is None:
            data = json.loads(zlib.decompress(payload[1:]))
            data["report"]["kernel"]["options"] = "[" * 100_000 + "]" * 100_000
            hostile = _packed(json.dumps(data).replace('"' + "[" * 100_000, "[" * 100_000)
                              .replace("]" * 100_000 + '"', "]" * 100_000).encode())
        payloads[key] = hostile
    store(home, payloads)
    analyzed.clear()
    assert scan_json(capsys, cache) == clean
    assert len(analyzed) == len(KERNELS)
    assert entries(home) == stored
    analyzed.clear()
    assert scan_json(capsys, cache) == clean and analyzed == []


def test_a_locked_index_costs_the_storing_not_the_run(cache, home, capsys, monkeypatch):
    """Another scan holding the write lock past the busy timeout: this one goes on without storing."""
    monkeypatch.setattr(index_db, "BUSY_SECONDS", 0.2)
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    main(["cache", "clear"])
    capsys.readouterr()
    (home / "index").mkdir(parents=True, exist_ok=True)
    index_db._connect(home / "index" / index_db.DATABASE).close()
    holder = sqlite3.connect(home / "index" / index_db.DATABASE, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert scan_json(capsys, cache) == clean
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert entries(home) == {}
    assert scan_json(capsys, cache) == clean
    assert len(entries(home)) == len(KERNELS)


def test_a_change_to_a_rules_helper_changes_the_salt():
    """rules/_memory.py decides IRS101-103's results but is no rule class's file."""
    import irscope.rules

    helper = Path(irscope.rules.__path__[0]) / "_memory.py"
    assert str(helper) in result_index.salted_sources()
    before = result_index.salt_for(())
    stat = helper.stat()
    try:
        os.utime(helper, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # as an edit would
        assert result_index.salt_for(()) != before
    finally:
        os.utime(helper, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert result_index.salt_for(()) == before


def test_the_size_cap_evicts_the_least_recently_used(cache, tmp_path, monkeypatch):
    report = max(scan(cache, index=False, jobs=1).kernels, key=lambda k: len(index_db.encode_entry((), None, k)))
    assert len(index_db.encode_entry((), None, report)) > 4096  # an entry spans pages of its own
    clock = iter(range(1, 1000))
    monkeypatch.setattr(index_db, "_now", lambda: next(clock))
    db = index_db.IndexDatabase(tmp_path / "index", max_size=1 << 30)
    keys = [f"key{i}" for i in range(12)]
    for key in keys:  # stored at times 1..12
        db.put(key, (), None, report)
    assert db.get("key0") is not None  # read: key0 becomes the most recently used on close
    db.close()
    with sqlite3.connect(tmp_path / "index" / index_db.DATABASE) as conn:
        in_use = index_db._bytes_in_use(conn)
    conn.close()
    db = index_db.IndexDatabase(tmp_path / "index", max_size=in_use // 2)
    db.put("key12", (), None, report)  # the newest
    db.close()
    kept = [key for key in keys + ["key12"] if db.holds(key)]
    db.close()
    assert "key0" in kept and "key12" in kept  # read last, stored last
    others = [key for key in kept if key not in ("key0", "key12")]
    assert "key1" not in kept and others == keys[len(keys) - len(others):]  # the oldest went first


def test_the_size_cap_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(index_db.ENV_MAX_SIZE, "3M")
    assert index_db.max_index_size() == 3 << 20
    monkeypatch.setenv(index_db.ENV_MAX_SIZE, "lots")
    assert index_db.max_index_size() == index_db.DEFAULT_MAX_SIZE


def test_cache_info_and_clear(cache, home, capsys):
    scan_json(capsys, cache)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(home / "index" / index_db.DATABASE) in out and f"entries       {len(KERNELS)}" in out
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().err
    assert not (home / "index" / index_db.DATABASE).exists()
    assert main(["cache"]) == 0
    assert "entries       0" in capsys.readouterr().out
    assert len(scan_json(capsys, cache)) == len(KERNELS)  # and the next scan starts a fresh one


def test_kernel_reports_read_back_from_the_index_equal_those_analyzed(cache, tmp_path):
    cold = scan(cache, index=tmp_path / "index", jobs=1)
    warm = scan(cache, index=tmp_path / "index", jobs=1)
    assert warm.kernels == cold.kernels
    assert [to_data(k) for k in warm.kernels] == [to_data(k) for k in cold.kernels]


def test_two_scans_writing_one_index_at_once_both_succeed(cache, home, tmp_path):
    """Concurrent scans share the database (WAL, busy timeout); neither may fail for the other."""
    import subprocess
    import sys

    env = {**os.environ, "IRSCOPE_CACHE_DIR": str(home)}
    command = [sys.executable, "-m", "irscope", "scan", str(cache), "--json"]
    runs = [subprocess.Popen(command + [str(tmp_path / f"{n}.json")], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE) for n in range(3)]
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    kernels = [json.loads((tmp_path / f"{n}.json").read_text())["kernels"] for n in range(3)]
    assert kernels[0] == kernels[1] == kernels[2] and len(kernels[0]) == len(KERNELS)
    assert len(entries(home)) == len(KERNELS)


def test_a_link_in_place_of_the_database_is_set_aside_and_its_target_untouched(cache, home, tmp_path, capsys):
    """A link planted where the database lives must not make irscope write through it."""
    clean = scan_json(capsys, cache, "--no-cache")
    victim = tmp_path / "victim.sqlite3"
    with sqlite3.connect(victim) as db:  # a database of someone else's, with irscope's very schema
        for statement in index_db._SCHEMA:
            db.execute(statement)
    db.close()
    before = victim.read_bytes()
    (home / "index").mkdir(parents=True)
    (home / "index" / index_db.DATABASE).symlink_to(victim)
    assert scan_json(capsys, cache) == clean
    assert victim.read_bytes() == before
    assert not (home / "index" / index_db.DATABASE).is_symlink()
    assert len(entries(home)) == len(KERNELS)


def test_a_forged_entry_cannot_make_irscope_read_another_file(cache, home, tmp_path, capsys, monkeypatch):
    """An entry names the young artifacts whose bytes are checked again: a forged one naming a file
    outside its kernel (a secret, a FIFO that would hang the read, a lone surrogate) is a miss."""
    clean = scan_json(capsys, cache, "--no-cache")
    scan_json(capsys, cache)
    secret = tmp_path / "secret"
    secret.write_text("token")
    forged = {}
    for n, (key, payload) in enumerate(entries(home).items()):
        data = json.loads(zlib.decompress(payload[1:]))
        data["young"] = [[str(secret)], ["\ud800"], ["a\0b"]][n % 3]
        forged[key] = _packed(json.dumps(data).encode())
    store(home, forged)
    read = []
    real = result_index.read_file
    monkeypatch.setattr(result_index, "read_file", lambda path, *a, **kw: read.append(path) or real(path, *a, **kw))
    assert scan_json(capsys, cache) == clean
    assert str(secret) not in read and all(Path(p).is_relative_to(cache) for p in read)
