"""In the child of `irscope scan script.py`: what each compiled kernel was compiled with, and
which config each autotuner chose (irscope/pipeline/runner_child.py writes the records; irscope/model/launches.py
reads them back).

Two JSON lines go into the launches file beside the launches: one "compiled" record per kernel
Triton compiles (its constexprs and options), and one "autotuned" record per distinct choice of
an autotuner (the kernel that ran, how many configs it had, and its own timings when a real GPU
measured them). Like runner_child, this imports triton only when the child runs it.
"""

from __future__ import annotations

import json
import math

# The options of a compiled kernel's metadata a config sets (AMD's are absent on NVIDIA).
OPTIONS = ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
MAX_TEXT = 200  # a repr of a constexpr value or a tuning key, cut here


def constexpr_values(src) -> dict[str, object]:
    """{"BLOCK_M": 128, ...}: the constexpr arguments a kernel was compiled with, by name.

    `src.constants` (Triton's ASTSource) names an argument by its index (an int, Triton 3.0-3.1),
    by its name (a str, 3.2: jit.py builds `{p.name: v ...}`) or by a 1-tuple `(i,)` (3.3 on).
    It also holds arguments specialized as constants (an int equal to 1, a None), which are not
    constexprs: `fn.constexprs` (argument indices, 3.0-3.9) says which are."""
    fn = getattr(src, "fn", None)
    names = list(getattr(fn, "arg_names", ()) or ())
    constexprs = set(getattr(fn, "constexprs", ()) or ())
    values = {}
    for key, value in (getattr(src, "constants", None) or {}).items():
        index = _argument_index(key, names)
        if isinstance(index, int) and 0 <= index < len(names) and (not constexprs or index in constexprs):
            values[names[index]] = value.value if type(value).__name__ == "constexpr" else value
    return values


def _argument_index(key: object, names: list[str]) -> object:
    """The argument a key of `src.constants` names, as its index where it names one (see constexpr_values)."""
    index = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    return names.index(index) if isinstance(index, str) and index in names else index


def _constant_indices(src, names: list[str]) -> set[int]:
    """Indices of the arguments `src.constants` holds: the constexprs and those specialized to a constant."""
    return {index for key in (getattr(src, "constants", None) or {})
            if isinstance(index := _argument_index(key, names), int)}


def scalar_arguments(src, values: tuple) -> list | None:
    """[[name, int or None], ...]: the kernel's arguments that stay arguments of its TTIR function (not a
    constexpr, not specialized to a constant), in order, each an int where the launch passed one. `values`
    are the launcher's trailing arguments: every argument of the kernel (Triton 3.3 on) or those that are
    not constexprs (before); which, is told by the constexprs' places holding their values. None when
    neither lines up."""
    fn = getattr(src, "fn", None)
    names = list(getattr(fn, "arg_names", ()) or ())
    if not names:
        return None
    constexprs = set(getattr(fn, "constexprs", ()) or ())
    known = constexpr_values(src)
    if len(values) >= len(names) and all(
            _same(known.get(names[i], _MISSING), values[len(values) - len(names) + i]) for i in constexprs):
        params = dict(zip(names, values[len(values) - len(names):]))
    else:
        kept = [n for i, n in enumerate(names) if i not in constexprs]
        if len(values) < len(kept):
            return None
        params = dict(zip(kept, values[len(values) - len(kept):]))
    constant = _constant_indices(src, names) | constexprs
    return [[name, value if isinstance(value := params.get(name), int) and not isinstance(value, bool) else None]
            for i, name in enumerate(names) if i not in constant]


_MISSING = object()


def _same(known: object, value: object) -> bool:
    """Whether a launch's value may be the constexpr's (an unknown constexpr matches anything)."""
    if known is _MISSING:
        return True
    if hasattr(value, "data_ptr"):  # a tensor where a constexpr stands: not the all-arguments layout
        return False
    try:
        return bool(known == value)
    except Exception:  # noqa: BLE001 - a value whose == is not a bool
        return False


def json_safe(value: object) -> object:
    """A constexpr value as JSON: numbers, strings, booleans and None as they are, others as repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value if not isinstance(value, str) else value[:MAX_TEXT]
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    return repr(value)[:MAX_TEXT]


def compiled_record(src, metadata) -> dict:
    record = {"record": "compiled", "hash": getattr(metadata, "hash", None), "name": getattr(metadata, "name", None),
              "constexprs": {k: json_safe(v) for k, v in constexpr_values(src).items()}}
    for option in OPTIONS:
        value = getattr(metadata, option, None)
        if isinstance(value, int) and not isinstance(value, bool):
            record[option] = value
    return record


class ConfigRecorder:
    """Writes the "compiled" and "autotuned" records. `launched()` is told of every launch, so the
    last one inside an `Autotuner.run` names the kernel of the config that ran."""

    def __init__(self, sink, stand_in: bool):
        self.sink, self.stand_in = sink, stand_in
        self.last_launched: str | None = None
        self.launches = 0
        self._compiled: set[str | None] = set()
        self._choices: set[tuple] = set()
        self._tuners: list = []  # kept alive, so that their ids stay theirs
        self.profile = None  # under --profile: the ProfileSession, paused while an autotuner times its configs
        self.benchmarking = 0  # inside an autotuner's timing of its configs

    def compiled(self, src, metadata) -> None:
        h = getattr(metadata, "hash", None)
        if h in self._compiled:
            return
        self._compiled.add(h)
        try:
            record = compiled_record(src, metadata)
        except Exception:  # noqa: BLE001 - an unusual source object: the kernel goes without a config
            return
        self.sink.write(json.dumps(record) + "\n")

    def launched(self, kernel_hash: str | None) -> None:
        self.last_launched, self.launches = kernel_hash, self.launches + 1

    def wrap_autotuner(self) -> None:
        """Wrap `Autotuner.run`: after it returns, one "autotuned" record for a choice not yet told."""
        from triton.runtime.autotuner import Autotuner

        real_run = Autotuner.run
        recorder = self

        def run(tuner, *args, **kwargs):
            cache = getattr(tuner, "cache", None)
            keys_before = set(cache) if isinstance(cache, dict) else set()
            timings_before = getattr(tuner, "configs_timings", None)
            launches_before = recorder.launches
            result = real_run(tuner, *args, **kwargs)
            if recorder.launches > launches_before:  # a run that launched nothing chose nothing
                try:
                    recorder.autotuned(tuner, keys_before, timings_before)
                except Exception:  # noqa: BLE001 - the script's run matters more than the record
                    pass
            return result

        Autotuner.run = run
        real_bench = getattr(Autotuner, "_bench", None)  # times one config: Triton 3.0-3.9
        if real_bench is None:
            return

        def bench(tuner, *args, **kwargs):
            recorder.benchmarking += 1
            try:
                if recorder.profile is None:
                    return real_bench(tuner, *args, **kwargs)
                with recorder.profile.paused():
                    return real_bench(tuner, *args, **kwargs)
            finally:
                recorder.benchmarking -= 1

        Autotuner._bench = bench

    def autotuned(self, tuner, keys_before: set, timings_before) -> None:
        cache = getattr(tuner, "cache", None)
        new_keys = [k for k in cache if k not in keys_before] if isinstance(cache, dict) else []
        key = repr(new_keys[-1])[:MAX_TEXT] if new_keys else None
        chosen = self.last_launched
        # A key-cache hit adds no key: its choice was told when the key was tuned.
        seen = {(k, h) for tuner_id, k, h in self._choices if tuner_id == id(tuner)}
        if (key, chosen) in seen or (key is None and any(h == chosen for _, h in seen)):
            return
        told = (id(tuner), key, chosen)
        self._choices.add(told)
        self._tuners.append(tuner)
        timings = getattr(tuner, "configs_timings", None)
        benchmarked = isinstance(timings, dict) and timings is not timings_before and bool(new_keys)
        measured = benchmarked and not self.stand_in
        fn = getattr(tuner, "base_fn", None) or getattr(tuner, "fn", None)
        self.sink.write(json.dumps({
            "record": "autotuned", "hash": chosen, "name": getattr(fn, "__name__", None), "key": key,
            "configs": len(getattr(tuner, "configs", ()) or ()), "measured": measured,
            "timings": [_timing(config, ms) for config, ms in timings.items()] if measured else [],
        }) + "\n")


def _timing(config, ms) -> dict:
    """One config's timing, keyed as the compiled records are: its kwargs, num_warps, num_stages."""
    values = ms if isinstance(ms, (list, tuple)) else [ms]
    finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return {"constexprs": {k: json_safe(v) for k, v in (getattr(config, "kwargs", None) or {}).items()},
            "num_warps": getattr(config, "num_warps", None), "num_stages": getattr(config, "num_stages", None),
            "ms": finite if len(finite) == len(values) else []}  # inf: the config could not run
