"""bench/fuzz.py --index: damage or forge the result index of a small cache copy, and scan again.

    nice -n 10 python bench/fuzz.py --index 500 --seed 1 [--minutes N]

A copy of eight hash directories (Triton 3.6 and 3.9) is scanned once without the index (the
reference) and once into a clean index. Each case copies that index, mutates it with a seeded
mutation, and runs `irscope scan COPY --json FILE -j 1` twice in this process:

- damage (bits flipped, a page zeroed or filled with garbage, a page copied over another, the file
  cut or grown, a payload's bit flipped, a schema object added): both scans must exit 0 with the
  reference's kernels (the damaged entries analyzed again); a second scan that analyzes kernels
  again (damage the first did not repair) is a note, not a failure;
- forgery (an entry's JSON changed and its checksum recomputed, payloads swapped between keys):
  the checksum cannot tell, so the results may differ; both scans must still exit 0.

Prints the cases by kind and outcome, each failure with the seed and kind that reproduce it
(`--index 1 --seed S --kind K`), and the time.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import fuzzing

import irscope.pipeline.index_db as index_db
import irscope.pipeline.analyze as pipeline
from irscope.cli.main import main

DAMAGE = ("flip_bits", "zero_page", "garbage_page", "copy_page", "truncate", "grow", "flip_payload", "schema")
FORGERY = ("forge_value", "swap_payloads")
KINDS = DAMAGE + FORGERY
# JSON values a forger might put anywhere in an entry
FORGED_VALUES = (None, -1, 2**63, 10**400, 1e308, "", "\ud800", "x" * 100_000, [], {}, [[[[[]]]]], {"type": "Nope"},
                 "1-999999999999", True)


def run(args) -> int:
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes else None
    kinds = [k for k in (args.kind or KINDS) if k in KINDS and k not in args.skip]
    # Entries' times from a counter, not the clock: the clean index, and so each case, is the same every run.
    index_db._now = itertools.count(1_700_000_000 * 10**9, 10**6).__next__
    with tempfile.TemporaryDirectory(prefix="irscope-fuzz-index-") as work:
        work = Path(work)
        cache = work / "cache"
        for cache_name in ("triton-3.6", "triton-3.9"):
            dirs = sorted(p for p in (fuzzing.FIXTURES / "caches" / cache_name).iterdir() if p.is_dir())
            for d in fuzzing.spread(dirs, 4):
                shutil.copytree(d, cache / d.name)
        reference, code = scan(cache, work / "ref.json", None)
        assert code == 0, f"the clean scan exited {code}"
        clean = work / "clean"
        _, code = scan(cache, work / "clean.json", clean)
        assert code == 0 and (clean / "index" / index_db.DATABASE).is_file()
        outcomes: dict[str, Counter] = defaultdict(Counter)
        failures, notes = [], []
        for n in range(args.index):
            if deadline and time.monotonic() > deadline:
                break
            seed = args.seed * 100_000 + n
            kind = kinds[n % len(kinds)]
            home = work / f"case{n}"
            shutil.copytree(clean, home)
            mutate(home / "index" / index_db.DATABASE, kind, random.Random(seed))
            problem, how = check(cache, home, kind, reference, work / "out.json")
            outcomes[kind][how] += 1
            if problem and how == "unstored":
                notes.append(f"note index: seed={seed} kind={kind}: {problem}")
                print(notes[-1], flush=True)
            elif problem:
                failures.append(f"FAIL index: seed={seed} kind={kind}: {problem}")
                print(failures[-1], flush=True)
            shutil.rmtree(home)
    total = sum(sum(c.values()) for c in outcomes.values())
    print(f"\nindex level: {total} cases in {time.monotonic() - started:.0f} s (seed {args.seed})")
    for kind in kinds:
        print(f"  {kind:14} " + ", ".join(f"{how} {count}" for how, count in sorted(outcomes[kind].items())))
    print(f"failures: {len(failures)}; notes (right results, but damage the next scan still pays for): {len(notes)}")
    return 1 if failures else 0


def scan(cache: Path, out: Path, home: Path | None) -> tuple[list, int]:
    """`irscope scan CACHE --json OUT -j 1` in this process, with `home` as IRSCOPE_CACHE_DIR
    (None: --no-cache); the kernels written and the exit code."""
    old = os.environ.get("IRSCOPE_CACHE_DIR")
    os.environ["IRSCOPE_CACHE_DIR"] = str(home or out.parent / "unused")
    out.unlink(missing_ok=True)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["scan", str(cache), "--json", str(out), "-j", "1"] + ([] if home else ["--no-cache"]))
    finally:
        if old is None:
            os.environ.pop("IRSCOPE_CACHE_DIR")
        else:
            os.environ["IRSCOPE_CACHE_DIR"] = old
    return (json.loads(out.read_text())["kernels"] if out.exists() else []), code


def check(cache: Path, home: Path, kind: str, reference: list, out: Path) -> tuple[str | None, str]:
    """What went wrong (None: nothing) and how the case came out."""
    analyzed: list[str] = []
    real = pipeline.analyze_kernel
    pipeline.analyze_kernel = lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw)
    try:
        for attempt in ("first", "second"):
            analyzed.clear()
            try:
                kernels, code = scan(cache, out, home)
            except BaseException as e:  # noqa: BLE001 - anything out of main is a finding
                return f"{attempt} scan raised {type(e).__name__}: {e}"[:300], "raised"
            if code != 0:
                return f"{attempt} scan exited {code}", f"exit {code}"
            if kind in DAMAGE and kernels != reference:
                return f"{attempt} scan gave other results than the scan without the index", "wrong"
            if attempt == "first":
                reanalyzed = len(analyzed)
        if kind in DAMAGE and analyzed:
            return f"the second scan analyzed {len(analyzed)} kernels again: the first did not store them", "unstored"
    finally:
        pipeline.analyze_kernel = real
    return None, ("all read" if reanalyzed == 0 else "some analyzed again" if reanalyzed < len(reference)
                  else "all analyzed again")


def mutate(path: Path, kind: str, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    pages = max(1, len(data) // 4096)
    if kind == "flip_bits":
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
    elif kind in ("zero_page", "garbage_page"):
        at = rng.randrange(pages) * 4096
        data[at:at + 4096] = bytes(4096) if kind == "zero_page" else rng.randbytes(4096)
    elif kind == "copy_page":
        a, b = rng.randrange(pages) * 4096, rng.randrange(pages) * 4096
        data[b:b + 4096] = data[a:a + 4096]
    elif kind == "truncate":
        del data[rng.randrange(len(data)):]
    elif kind == "grow":
        data += rng.randbytes(rng.randint(1, 3 * 4096))
    else:
        return mutate_entries(path, kind, rng)
    path.write_bytes(bytes(data))


def mutate_entries(path: Path, kind: str, rng: random.Random) -> None:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT key, payload FROM entries ORDER BY key").fetchall()
        if kind == "schema":
            db.execute(rng.choice(["CREATE TABLE extra (x)", "CREATE VIEW extra AS SELECT 1",
                                   "CREATE INDEX extra ON entries (checksum)",
                                   "CREATE TRIGGER extra AFTER INSERT ON entries BEGIN DELETE FROM entries; END"]))
        elif kind == "flip_payload":
            key, payload = rng.choice(rows)
            at = rng.randrange(len(payload))
            payload = payload[:at] + bytes([payload[at] ^ (1 << rng.randrange(8))]) + payload[at + 1:]
            db.execute("UPDATE entries SET payload = ? WHERE key = ?", (payload, key))
        elif kind == "swap_payloads":
            (a, pa), (b, pb) = rng.sample(rows, 2)
            for key, payload in ((a, pb), (b, pa)):
                db.execute("UPDATE entries SET payload = ?, checksum = ? WHERE key = ?",
                           (payload, index_db.checksum(payload), key))
        elif kind == "forge_value":
            key, payload = rng.choice(rows)
            data = json.loads(zlib.decompress(payload[1:]))
            _forge(data, rng)
            forged = b"z" + zlib.compress(json.dumps(data).encode(), 1)
            db.execute("UPDATE entries SET payload = ?, checksum = ? WHERE key = ?",
                       (forged, index_db.checksum(forged), key))
        db.commit()
    finally:
        db.close()


def _forge(data, rng: random.Random) -> None:
    """Replace one value somewhere in `data` (a random walk down from the top) by a hostile one."""
    node = data
    for _ in range(rng.randint(1, 12)):
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        children = [(k, v) for k, v in children if isinstance(v, (dict, list)) and v]
        if not children:
            break
        _, node = rng.choice(children)
    keys = list(node.keys()) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        node[rng.choice(keys)] = rng.choice(FORGED_VALUES)
