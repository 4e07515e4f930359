"""The mutations of tests/fuzzing.py: each takes a real fixture file's bytes and a seeded Random
and returns the file changed in one named way. Nothing here writes IR or ISA of its own."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path
from typing import Callable

HUGE_LINE = 10 * 1024 * 1024  # the "huge line": 10 MB without a newline

# ---- mutations -------------------------------------------------------------------------------
# Each takes the original bytes and a Random and returns new bytes. Text mutations split on
# b"\n" and keep the line ends, so what they do not touch stays byte for byte.


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[:rng.randrange(len(data) + 1)]


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        i = rng.randrange(len(out))
        # Half the flips stay printable ASCII, so text parsers see more than decode errors.
        out[i] = rng.randrange(0x20, 0x7F) if rng.random() < 0.5 else out[i] ^ (1 << rng.randrange(8))
    return bytes(out)


def delete_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    start = rng.randrange(len(lines))
    count = rng.choice((1, 1, 1, 2, 5, 20))
    return b"".join(lines[:start] + lines[start + count:])


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    start = rng.randrange(len(lines))
    chunk = lines[start:start + rng.choice((1, 1, 3, 10))]
    at = rng.choice((start, rng.randrange(len(lines) + 1)))  # in place, or somewhere else
    return b"".join(lines[:at] + chunk * rng.choice((1, 2, 5)) + lines[at:])


def swap_tokens(data: bytes, rng: random.Random) -> bytes:
    """One word or number replaced by another word of the same file: structure kept, meaning not."""
    tokens = list(re.finditer(rb"[\w.$%#@-]+", data))
    if len(tokens) < 2:
        return data
    for _ in range(rng.choice((1, 1, 3))):
        a, b = rng.choice(tokens), rng.choice(tokens)
        data = data[:a.start()] + b.group() + data[a.end():]
        tokens = list(re.finditer(rb"[\w.$%#@-]+", data)) if len(data) < 1_000_000 else tokens
    return data


def extreme_numbers(data: bytes, rng: random.Random) -> bytes:
    """A number replaced by one no compiler writes: huge, negative, zero, hex, float."""
    numbers = list(re.finditer(rb"\b\d+\b", data))
    if not numbers:
        return data
    for _ in range(rng.choice((1, 1, 4))):
        m = rng.choice(numbers)
        new = rng.choice((b"0", b"-1", b"4294967296", b"99999999999999999999999", b"0x7fffffff", b"1.5",
                          b"1e400", b"-0", str(int(m.group()) + 1).encode()))
        data = data[:m.start()] + new + data[m.end():]
        numbers = list(re.finditer(rb"\b\d+\b", data)) if len(data) < 1_000_000 else numbers
    return data


def splice_junk(data: bytes, rng: random.Random) -> bytes:
    """Binary junk (random bytes, NULs, invalid UTF-8, control characters) put into the file."""
    junk = rng.choice((
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
        b"\0" * rng.randrange(1, 16),
        b"\xff\xfe\xc3\x28",
        b"\x1b[31m\r\x08\x07",
        "ünïcödé ∑ \u202e".encode(),
    ))
    at = rng.randrange(len(data) + 1)
    return data[:at] + junk + data[at:]


def unbalance(data: bytes, rng: random.Random) -> bytes:
    """Brackets, braces, quotes opened many times: nesting and string-scanning limits."""
    opener = rng.choice((b"(", b"{", b"[", b"<", b'"', b"'", b"/*", b"!{"))
    at = rng.randrange(len(data) + 1)
    return data[:at] + opener * rng.choice((1, 10, 1000, 100_000)) + data[at:]


_DEFINITION = re.compile(rb"^[ \t]*([#!%^][\w.$-]+)[ \t]*=(.*)$", re.M)
_REFERENCE = re.compile(rb"[#!%^][\w.$-]+")


def self_reference(data: bytes, rng: random.Random) -> bytes:
    """A definition (`#loc3 = loc(#loc2)`, `!12 = !{!11}`, `%5 = op %4`) made to refer to itself
    or to one defined later: resolvers that follow references must not loop or recurse forever."""
    defs = list(_DEFINITION.finditer(data))
    if not defs:
        return data
    d = rng.choice(defs)
    refs = [m for m in _REFERENCE.finditer(data, d.start(2), d.end(2))]
    if not refs:
        return data
    ref = rng.choice(refs)
    name = d.group(1) if rng.random() < 0.7 else rng.choice(defs).group(1)
    return data[:ref.start()] + name + data[ref.end():]


def reference_chain(data: bytes, rng: random.Random) -> bytes:
    """A definition whose reference goes through 3,000 copies of the same line first
    (`#loc15 = loc(#c2999)`, `#c2999 = loc(#c2998)`, ..., `#c0 = <the original>`): resolvers
    that recurse per reference overflow Python's stack on it."""
    defs = [d for d in _DEFINITION.finditer(data) if _REFERENCE.search(data, d.start(2), d.end(2))]
    if not defs:
        return data
    d = rng.choice(defs)
    name, rhs = d.group(1), d.group(2)
    ref = rng.choice(list(_REFERENCE.finditer(rhs)))
    numeric = re.fullmatch(rb"[#!%^]\d+", name) is not None
    chained = [name[:1] + (str(900_000 + k).encode() if numeric else b"zz%d" % k) for k in range(3000)]
    lines = [chained[0] + b" =" + rhs]
    lines += [c + b" =" + rhs[:ref.start()] + prev + rhs[ref.end():] for prev, c in zip(chained, chained[1:])]
    head = name + b" =" + rhs[:ref.start()] + chained[-1] + rhs[ref.end():]
    line_start = data.rfind(b"\n", 0, d.start()) + 1
    return data[:line_start] + b"\n".join(lines) + b"\n" + head + data[d.end():]


def char_run(data: bytes, rng: random.Random) -> bytes:
    """One character of the file repeated 100,000 times inside a line: regexes that backtrack
    over a run (catastrophic or quadratic) take seconds or minutes on it."""
    at = rng.randrange(len(data) + 1)
    char = data[rng.randrange(len(data)):][:1] if data and rng.random() < 0.5 else \
        bytes([rng.choice(b"([{<\"'/*!%@#$:,;=|\\ \t-_.0ax")])
    if char == b"\n":
        char = b" "
    return data[:at] + char * 100_000 + data[at:]


RUN_CHARS = b" \t([{<:,=0a.%\"#!;/-x@$*'"


def line_shapes(data: bytes) -> dict[bytes, list[int]]:
    """Line indexes by shape (the first word, digits made `N`): `.loc`, `v_add_f32`, `!N`, `;`, ..."""
    shapes: dict[bytes, list[int]] = {}
    for i, line in enumerate(_lines(data)):
        word = line.split(None, 1)[0][:24] if line.strip() else b""
        shapes.setdefault(re.sub(rb"\d+", b"N", word), []).append(i)
    return shapes


def line_run(data: bytes, rng: random.Random) -> bytes:
    """A run of 20,000 of one character at the start of a token of a line. The line is drawn by
    its shape, so rare kinds of line (a `; Kernel info` field, a `!DILocation`) come up as often
    as instructions; char_run's random offsets rarely reach them."""
    lines = _lines(data)
    shapes = line_shapes(data)
    i = rng.choice(shapes[rng.choice(sorted(shapes))])
    line = lines[i]
    starts = [0] + [m.end() for m in re.finditer(rb"[ \t:(,=]+", line)]
    at = rng.choice(starts)
    run = bytes([rng.choice(RUN_CHARS)]) * 20_000
    return b"".join(lines[:i]) + line[:at] + run + line[at:] + b"".join(lines[i + 1:])


def run_probes(data: bytes, per_shape: int = 1):
    """Every shape of line x every RUN_CHARS character x every token start (bench/fuzz.py --probe):
    yields (description, mutated bytes)."""
    lines = _lines(data)
    for _, where in sorted(line_shapes(data).items()):
        for i in where[:per_shape]:
            line = lines[i]
            for at in sorted({0} | {m.end() for m in re.finditer(rb"[ \t:(,=]+", line)}):
                for char in RUN_CHARS:
                    mutated = b"".join(lines[:i]) + line[:at] + bytes([char]) * 20_000 + line[at:] + \
                        b"".join(lines[i + 1:])
                    yield f"line {i + 1} at {at}: {chr(char)!r} x 20000", mutated


_INNERMOST = re.compile(rb"([\[(<{])([^\[\](){}<>\n]*)([\])>}])")


def deep_nesting(data: bytes, rng: random.Random) -> bytes:
    """A bracketed group of the file nested in itself 200-2,000 times, balanced: `[1 x i32]` ->
    `[1 x [1 x ... [1 x i32]...]]`, `(%a, %b)` -> `(%a, (%a, ... (%a, %b)))`. Readers and
    resolvers that recurse per level must stop before Python's stack does."""
    groups = list(_INNERMOST.finditer(data))
    if not groups:
        return data
    g = rng.choice(groups)
    opener, body, closer = g.groups()
    cut = max(body.rfind(b" "), body.rfind(b","))
    prefix = body[:cut + 1] if cut >= 0 else b""
    n = rng.choice((200, 2000))
    return data[:g.start()] + (opener + prefix) * n + g.group() + closer * n + data[g.end():]


def huge_line(data: bytes, rng: random.Random) -> bytes:
    """A 10 MB line made of one of the file's own lines repeated, put at a random line."""
    lines = _lines(data)
    at = rng.randrange(len(lines))
    seed_line = lines[rng.randrange(len(lines))].rstrip(b"\r\n") or b"x"
    line = (seed_line * (HUGE_LINE // len(seed_line) + 1))[:HUGE_LINE]
    if rng.random() < 0.5:  # a line that runs on into the next one: no newline before it
        return b"".join(lines[:at]) + line + b"".join(lines[at:])
    return b"".join(lines[:at]) + line + b"\n" + b"".join(lines[at:])


def empty(data: bytes, rng: random.Random) -> bytes:
    return rng.choice((b"", b"\n", b" ", data[:1]))


TEXT_MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncate": truncate,
    "flip_bytes": flip_bytes,
    "delete_lines": delete_lines,
    "duplicate_lines": duplicate_lines,
    "swap_tokens": swap_tokens,
    "extreme_numbers": extreme_numbers,
    "splice_junk": splice_junk,
    "unbalance": unbalance,
    "char_run": char_run,
    "line_run": line_run,
    "self_reference": self_reference,
    "reference_chain": reference_chain,
    "deep_nesting": deep_nesting,
    "huge_line": huge_line,
    "empty": empty,
}

# ---- json mutations: not json at all, or json of the wrong shape ------------------------------

_WRONG_VALUES = ("four", None, {}, [], 1.5, True, -1, 0, 2 ** 70, "", {"backend": 1}, [4])


def _wrong(rng: random.Random):
    return json.loads(json.dumps(rng.choice(_WRONG_VALUES)))  # a fresh copy: never the same dict twice


def json_not_json(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    how = rng.randrange(6)
    if how == 0:
        return data[:rng.randrange(1, max(2, len(data)))]  # cut inside the object
    if how == 1:
        i = rng.randrange(len(text) + 1)
        return (text[:i] + rng.choice(",:}{][\"'") + text[i:]).encode()
    if how == 2:
        return text.replace('"', "'", rng.randrange(1, 5)).encode()
    if how == 3:
        return text.replace(":", " ", 1).encode()
    if how == 4:
        return (text + rng.choice(("garbage", "}", "{}", "\0"))).encode()
    return text.replace("4", "NaN", 1).replace("true", "True", 1).encode()


def json_wrong_shape(data: bytes, rng: random.Random) -> bytes:
    try:
        value = json.loads(data)
    except ValueError:
        return json_not_json(data, rng)
    how = rng.randrange(4) if isinstance(value, dict) and value else 0
    if how == 0:  # not an object at all
        return json.dumps(rng.choice(([value], list(value) if isinstance(value, dict) else value, "a string",
                                      42, None, [], True))).encode()
    keys = list(value)
    if how == 1:  # right keys, wrong types
        for key in rng.sample(keys, min(len(keys), rng.choice((1, 1, 3, len(keys))))):
            value[key] = _wrong(rng)
    elif how == 2:  # missing keys
        for key in rng.sample(keys, rng.randrange(1, len(keys) + 1)):
            del value[key]
    else:  # the keys every reader looks at, given the wrong type
        for key in ("num_warps", "num_stages", "shared", "name", "target", "hash", "triton_version", "child_paths"):
            if key in value and rng.random() < 0.5:
                value[key] = _wrong(rng)
        if isinstance(value.get("target"), dict):
            value["target"][rng.choice(("backend", "arch", "warp_size"))] = _wrong(rng)
    return json.dumps(value).encode()


JSON_MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "json_not_json": json_not_json,
    "huge_line": huge_line,
    "json_wrong_shape": json_wrong_shape,
    "truncate": truncate,
    "flip_bytes": flip_bytes,
    "splice_junk": splice_junk,
    "extreme_numbers": extreme_numbers,
    "unbalance": unbalance,
    "char_run": char_run,
    "empty": empty,
}

BINARY_MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncate": truncate,
    "flip_bytes": flip_bytes,
    "splice_junk": splice_junk,
    "empty": empty,
}


def mutations_for(path: Path) -> dict[str, Callable[[bytes, random.Random], bytes]]:
    if path.suffix == ".json":
        return JSON_MUTATIONS
    if path.suffix in (".cubin", ".hsaco"):
        return BINARY_MUTATIONS
    if path.suffix == ".gz":
        return {**BINARY_MUTATIONS, **{f"inner_{k}": _inner(f) for k, f in TEXT_MUTATIONS.items()
                                       if k != "huge_line"}}
    return TEXT_MUTATIONS


def _inner(mutate: Callable[[bytes, random.Random], bytes]) -> Callable[[bytes, random.Random], bytes]:
    """A text mutation of a gzipped file's contents, gzipped again."""
    def run(data: bytes, rng: random.Random) -> bytes:
        return gzip.compress(mutate(gzip.decompress(data), rng), mtime=0)
    return run
