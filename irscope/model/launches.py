"""Kernel launches recorded while `irscope scan script.py` ran the script.

The child process (irscope/pipeline/runner_child.py) appends one JSON line per launch; here they are
read back, the identical ones counted together, and matched to the harvested kernels by
Triton's cache hash. Beside them the child writes (irscope/pipeline/config_recorder.py) each compiled
kernel's constexprs and options, and each autotuner's choice: read here the same way. The file
is the script's to write into, so every value is checked and bounded, and a line that is not a
well-formed record is skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Iterator

from irscope.model.profile import RunProfile
from irscope.model.serde import loads_bounded

MAX_TEXT = 200  # a constexpr's value or a tuning key as text
MAX_ITEMS = 256  # constexprs of a kernel, configs of an autotuner


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, ...]  # workgroups (blocks) in x, y, z
    num_warps: int | None
    num_stages: int | None
    shared: int | None
    compute_units: int | None  # CUs / SMs of the device (for --target: the usual device of that arch)
    path: str | None  # the script line that launched it
    line: int | None
    # Under --target: why the grid looks sized from this machine's CPU, not the target's GPU
    # (runner_child.cpu_shaped: "grid x = 16 = os.cpu_count() on this machine"); None when it does not.
    cpu_shaped: str | None = None
    count: int = 1  # identical launches

    @property
    def workgroups(self) -> int:
        return prod(self.grid)


@dataclass(frozen=True)
class StandInAnswer:
    """A question the script (or a library it calls) asked the stand-in device, and how often."""

    question: str  # "torch.cuda.get_device_properties", "triton.testing.do_bench"
    count: int


@dataclass(frozen=True)
class ScriptRun:
    """What `irscope scan script.py` ran."""

    script: str
    argv: tuple[str, ...]
    target: str | None  # None: the real GPU
    exit_code: int
    launches: int  # launches recorded, all kernels
    device: str | None = None  # under --target: the device the stand-in answered for ("AMD Instinct MI300X")
    stand_in: tuple[StandInAnswer, ...] = ()  # under --target: what the stand-in answered, most asked first
    reason: str | None = None  # why the script failed, when irscope can name it (a config Triton rejects)
    kept: str | None = None  # the run's directory while it is kept (its cache, launches, report)
    profile: RunProfile | None = None  # with --profile: the GPU time of the whole run
    unprofiled: str | None = None  # with --profile: why no profile came back (no Proton, no CUPTI, a bad file)


@dataclass(frozen=True)
class CompiledConfig:
    """What one compiled kernel was compiled with: its constexprs and the options a config sets."""

    hash: str
    name: str | None
    constexprs: tuple[tuple[str, str], ...]  # (name, value as text: "128", "True", "fp16"), the kernel's order
    num_warps: int | None = None
    num_stages: int | None = None
    waves_per_eu: int | None = None  # AMD only, as are the two below
    matrix_instr_nonkdim: int | None = None
    kpack: int | None = None


@dataclass(frozen=True)
class ConfigTiming:
    """One autotune config as the autotuner timed it; its kwargs are a compiled kernel's constexprs."""

    constexprs: tuple[tuple[str, str], ...]
    num_warps: int | None
    num_stages: int | None
    ms: tuple[float, ...]  # as Triton's benchmarker answered (median, 20th, 80th percentile); () if it failed


@dataclass(frozen=True)
class AutotuneChoice:
    """An autotuner's choice for one tuning key: the kernel (`hash`) of the config that ran."""

    hash: str
    name: str | None  # the autotuned function
    key: str | None  # the tuning key's repr; None when no key was tuned (a single config)
    configs: int  # configs the autotuner had
    measured: bool  # timed on a real GPU; False under --target, where every config times the same
    timings: tuple[ConfigTiming, ...] = ()  # when measured


def read_launches(path: str | Path) -> dict[str, tuple[Launch, ...]]:
    """Kernel hash -> its distinct launches, in first-seen order. Unreadable lines are skipped:
    a script killed mid-write leaves at most one."""
    counts: Counter = Counter()
    order: dict[str, list[tuple]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            d = json.loads(line)
            if "record" in d:  # a compiled kernel's config or an autotuner's choice
                continue
            key = (tuple(int(g) for g in d["grid"]), d.get("num_warps"), d.get("num_stages"), d.get("shared"),
                   d.get("compute_units"), d.get("path"), d.get("line"),
                   d["cpu_shaped"] if isinstance(d.get("cpu_shaped"), str) else None)
        except (ValueError, KeyError, TypeError):
            continue
        h = d.get("hash") or ""
        if (h, key) not in counts:
            order.setdefault(h, []).append(key)
        counts[(h, key)] += 1
    return {h: tuple(Launch(*key, count=counts[(h, key)]) for key in keys) for h, keys in order.items()}


def read_compiled(path: str | Path) -> dict[str, CompiledConfig]:
    """Kernel hash -> what it was compiled with (the first record of a hash)."""
    out: dict[str, CompiledConfig] = {}
    for d in _records(path, "compiled"):
        try:
            h, options = d["hash"], {o: _count(d.get(o)) for o in _OPTIONS}
            config = CompiledConfig(_text(h), _name(d.get("name")), _constexprs(d.get("constexprs")), **options)
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(h, str) and h and h not in out:
            out[h] = config
    return out


def read_autotune(path: str | Path) -> dict[str, tuple[AutotuneChoice, ...]]:
    """Kernel hash -> the autotuners' choices of it, one per tuning key, in the order they were made."""
    out: dict[str, list[AutotuneChoice]] = {}
    for d in _records(path, "autotuned"):
        try:
            h, measured, timings = d["hash"], d.get("measured"), d.get("timings") or []
            if not isinstance(h, str) or not h or not isinstance(measured, bool) or not isinstance(timings, list):
                continue
            key = d.get("key")
            choice = AutotuneChoice(h, _name(d.get("name")), _text(key) if key is not None else None,
                                    _count(d.get("configs")) or 0, measured,
                                    tuple(_timing(t) for t in timings[:MAX_ITEMS]) if measured else ())
        except (ValueError, KeyError, TypeError):
            continue
        if choice not in out.get(h, ()):
            out.setdefault(h, []).append(choice)
    return {h: tuple(choices) for h, choices in out.items()}


_OPTIONS = ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack")


def _records(path: str | Path, kind: str) -> Iterator[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return
    for line in lines:
        try:
            d = loads_bounded(line)
        except ValueError:  # a line cut short, or not JSON
            continue
        if isinstance(d, dict) and d.get("record") == kind:
            yield d


def _text(value: object) -> str:
    """A JSON value as the text a constexpr shows: 128, True, None, fp16."""
    if isinstance(value, (dict, list)):
        raise ValueError("not a plain value")
    return str(value)[:MAX_TEXT]


def _name(value: object) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) else None


def _count(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 31:
        raise ValueError(f"not a count: {value!r:.40}")
    return value


def _constexprs(values: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(values, dict) or len(values) > MAX_ITEMS:
        raise ValueError("constexprs are not a name -> value object")
    return tuple((name[:MAX_TEXT], _text(v)) for name, v in values.items())


def _timing(d: object) -> ConfigTiming:
    if not isinstance(d, dict):
        raise ValueError("a timing is not an object")
    ms = d.get("ms") or []
    if not isinstance(ms, list) or len(ms) > 16 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e12 for v in ms):
        raise ValueError("ms are not times")
    return ConfigTiming(_constexprs(d.get("constexprs") or {}), _count(d.get("num_warps")),
                        _count(d.get("num_stages")), tuple(float(v) for v in ms))
