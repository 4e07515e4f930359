"""The child process of `irscope scan script.py`: record launches, then run the script.

Run as `python -m irscope.pipeline.runner_child --launches FILE --outcome FILE [--target ARCH | --profile PATH]
SCRIPT [ARGS...]` with TRITON_CACHE_DIR pointing at irscope's run cache. With --target it installs
the stand-in device (every launch compiles for ARCH and runs nothing); without, the real
driver runs the kernels and its launcher is wrapped the same way. Each launch is appended to
the launches FILE as one JSON line the moment it happens, so a script that fails later still
leaves them; beside them go each compiled kernel's constexprs and options and each
autotuner's choice (irscope/pipeline/config_recorder.py). The script runs as `__main__` with its own
argv; its output and traceback are its own. The outcome FILE says, as JSON, what the stand-in
answered and, when the script failed in a way irscope can name (a config Triton rejects,
Ctrl-C), that reason in one line. With --profile, Proton times every kernel on the GPU into
`PATH.hatchet`, each launch under a scope of its own (irscope/pipeline/profile_session.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import sys
import traceback

from irscope.pipeline.config_recorder import ConfigRecorder, constexpr_values

NO_DRIVER = 4  # the runner turns this into a usage error
INTERRUPTED = 130


def main() -> int:
    parser = argparse.ArgumentParser(prog="irscope.pipeline.runner_child")
    parser.add_argument("--launches", required=True)
    parser.add_argument("--outcome", required=True)
    parser.add_argument("--target")
    parser.add_argument("--profile", metavar="PATH", help="time every kernel with Proton into PATH.hatchet")
    parser.add_argument("--counters", action="store_true",
                        help="run under Nsight Compute (--profile-from-start off): profile the launches, not the "
                             "autotuners' timing")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    script = os.path.realpath(opts.script)
    outcome = Outcome(opts.outcome)
    recorder = LaunchRecorder(opts.launches, script, stand_in=bool(opts.target))
    try:
        import triton  # noqa: F401 - the script needs it; fail here with a clear message
    except ImportError:
        print("irscope: the script's Python has no triton (pip install triton)", file=sys.stderr)
        return 3
    recorder.configs.wrap_autotuner()
    if opts.target:
        from irscope.pipeline.stand_in.driver import install

        try:
            outcome.questions = install(opts.target, recorder.on_launcher)
        except RuntimeError as exc:
            print(f"irscope: {exc}", file=sys.stderr)
            return NO_DRIVER
    else:
        try:
            _wrap_real_driver(recorder.on_launcher)
        except RuntimeError as exc:  # Triton: "0 active drivers ([]). There should only be one."
            print(f"irscope: no GPU driver is active here ({exc}); give --target ARCH to compile for a target "
                  "without running", file=sys.stderr)
            return NO_DRIVER
        if opts.profile or opts.counters:
            recorder.start_profile(opts.profile, outcome)
    sys.argv = [opts.script, *opts.args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(opts.script, run_name="__main__")
    except SystemExit as exc:
        return outcome.done(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))
    except KeyboardInterrupt:
        return outcome.done(INTERRUPTED, "interrupted (Ctrl-C)")
    except BaseException as exc:  # noqa: BLE001 - the script's own traceback, as Python prints it
        reason = rejected_config(exc, recorder.last_compiled, opts.target)
        if reason is None:
            tb = exc.__traceback__
            while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != script:
                tb = tb.tb_next  # drop irscope's and runpy's frames: the traceback starts in the script
            traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        return outcome.done(1, reason)
    return outcome.done(0)


class Outcome:
    """What the runner reads back: the stand-in's answers, and a failure irscope can name."""

    def __init__(self, path: str):
        self.path, self.questions = path, {}
        self.profile = None  # the ProfileSession, written out before the outcome

    def done(self, code: int, reason: str | None = None) -> int:
        record = {"questions": dict(self.questions), "reason": reason, "exit_code": code}
        if self.profile is not None:
            record["profile_problem"] = self.profile.finish()
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(record, f)
        return code


class LaunchRecorder:
    """Wraps each launcher: one JSON line per launch, one per kernel compiled (its config), and the
    last kernel compiled (for errors)."""

    def __init__(self, path: str, script: str, stand_in: bool = False):
        self.sink = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process
        self.script = script
        self.stand_in = stand_in  # only under --target can a grid be sized from this CPU by mistake
        self.last_compiled = None  # (src, metadata) of the newest launcher: the kernel Triton checks next
        self._units: list[int | None] = []
        self.configs = ConfigRecorder(self.sink, stand_in)
        self.profile = None  # a ProfileSession under --profile

    def start_profile(self, path: str | None, outcome: Outcome) -> None:
        """Proton's session into `path`, or with no path Nsight Compute's (the child runs under ncu)."""
        from irscope.pipeline.profile_session import CounterSession, ProfileSession

        session = outcome.profile = ProfileSession(path) if path else CounterSession()
        if session.start():
            self.profile = self.configs.profile = session
        else:
            print(f"irscope: --profile: {session.problem}; the script runs unprofiled", file=sys.stderr)

    def on_launcher(self, src, metadata, launch):
        self.last_compiled = (src, metadata)
        self.configs.compiled(src, metadata)

        def recording(grid_x, grid_y, grid_z, *rest, **kwargs):
            grid = [int(grid_x), int(grid_y), int(grid_z)]
            line = _script_line(self.script)
            kernel_hash = getattr(metadata, "hash", None)
            self.configs.launched(kernel_hash)
            record = {
                "hash": kernel_hash, "name": getattr(metadata, "name", None), "grid": grid,
                "num_warps": getattr(metadata, "num_warps", None), "num_stages": getattr(metadata, "num_stages", None),
                "shared": getattr(metadata, "shared", None), "compute_units": self.compute_units(),
                "path": self.script if line else None, "line": line,
                "cpu_shaped": cpu_shaped(grid) if self.stand_in else None,
            }
            if self.profile is None:
                self.sink.write(json.dumps(record) + "\n")
                return launch(grid_x, grid_y, grid_z, *rest, **kwargs)
            from irscope.pipeline.config_recorder import scalar_arguments
            from irscope.pipeline.profile_session import tensor_bytes

            number = self.configs.launches
            record.update(launch=number, autotune=self.configs.benchmarking > 0, bytes=tensor_bytes(rest),
                          args=scalar_arguments(src, rest))
            self.sink.write(json.dumps(record) + "\n")
            with self.profile.launch_scope(number, kernel_hash):
                return launch(grid_x, grid_y, grid_z, *rest, **kwargs)
        return recording

    def compute_units(self) -> int | None:
        """CUs/SMs of the device: the stand-in's table entry, or the real device's count."""
        if not self._units:
            from triton.runtime import driver

            active = driver.active
            units = getattr(active, "compute_units", None)
            if units is None:
                try:
                    props = active.utils.get_device_properties(active.get_current_device())
                    units = props.get("multiprocessor_count")
                except Exception:  # noqa: BLE001 - unknown on this driver: the grid rule stays silent
                    units = None
            self._units.append(units)
        return self._units[0]


def cpu_shaped(grid: list[int]) -> str | None:
    """Why a grid looks sized from this machine's CPU rather than the GPU, or None.

    A library that sizes a persistent grid from "the device" reads, on CPU tensors, the CPU's
    thread or core count; the stand-in answers the GPU questions, but not those. A grid
    dimension equal to one of them (above 2, where coincidences are rare) is named."""
    counts = {"os.cpu_count()": os.cpu_count() or 0}
    torch = sys.modules.get("torch")
    if torch is not None:
        counts["torch.get_num_threads()"] = torch.get_num_threads()
    for axis, n in zip("xyz", grid):
        for source, count in counts.items():
            if n == count and count > 2:
                return f"grid {axis} = {n} = {source} on this machine"
    return None


def rejected_config(exc: BaseException, last_compiled, target: str | None) -> str | None:
    """One line for a config Triton refuses to launch or to compile, with the numbers."""
    kind = type(exc).__name__
    if kind not in ("OutOfResources", "CompilationError", "CompileTimeAssertionFailure", "PTXASError"):
        return None
    if kind == "OutOfResources":
        src, metadata = last_compiled or (None, None)  # the launcher was made just before the check failed
        name, config = getattr(metadata, "name", None), _config(src, metadata)
    else:
        name, config = _launch_in_traceback(exc)
        source = getattr(exc, "src", None)
        if name is None and isinstance(source, str):
            match = re.search(r"def\s+(\w+)\s*\(", source)
            name = match.group(1) if match else None
    where = f"{name or 'a kernel'} ({config})" if config else (name or "a kernel")
    if kind == "OutOfResources":
        unit = {"shared memory": "B of LDS" if (target or "").startswith("gfx") else "B of shared memory",
                "threads": "threads per workgroup", "tensor memory": "columns of tensor memory"}.get(exc.name, exc.name)
        return f"{where} needs {exc.required:,} {unit}, {target or 'this GPU'} has {exc.limit:,}: Triton refuses " \
               "to launch it"
    message = getattr(exc, "error_message", None) or next(
        (line for line in reversed(str(exc).splitlines()) if line.strip()), kind)
    return f"{where}: Triton could not compile it: {' '.join(str(message).split())}"


def _config(src, metadata) -> str:
    """`BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=2` of a compiled kernel."""
    parts = [f"{name}={value}" for name, value in constexpr_values(src).items()]
    for option in ("num_warps", "num_stages"):
        if getattr(metadata, option, None) is not None:
            parts.append(f"{option}={getattr(metadata, option)}")
    return ", ".join(parts)


def _launch_in_traceback(exc: BaseException) -> tuple[str | None, str]:
    """(kernel name, its constexprs and options) from the launch that failed to compile: the frame of
    Triton's `JITFunction.run(self, *args, grid, warmup, **kwargs)`, the same in Triton 3.0-3.9."""
    tb, found = exc.__traceback__, None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "run" and hasattr(frame.f_locals.get("self"), "arg_names"):
            found = frame.f_locals
        tb = tb.tb_next
    if found is None:
        return None, ""
    fn, args, kwargs = found["self"], found.get("args") or (), found.get("kwargs") or {}
    names = list(fn.arg_names)
    values = dict(zip(names, args), **{k: v for k, v in kwargs.items() if k in names})
    parts = [f"{names[i]}={values[names[i]]}" for i in getattr(fn, "constexprs", ()) if names[i] in values]
    parts += [f"{k}={kwargs[k]}" for k in ("num_warps", "num_stages") if k in kwargs]
    return getattr(fn, "__name__", None), ", ".join(parts)


def _wrap_real_driver(on_launcher) -> None:
    from triton.runtime import driver

    active = driver.active
    real = active.launcher_cls
    active.launcher_cls = lambda src, metadata: on_launcher(src, metadata, real(src, metadata))
    # torch.compile (inductor, torch 2.8+) launches its kernels through a static CUDA launcher of its
    # own that never asks Triton for a launcher: no launch of an inductor kernel was recorded (an
    # H100 run of 698 kernels, 0 launches). Its Triton-launcher path is the same kernel, the same grid.
    os.environ.setdefault("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", "0")


def _script_line(script: str) -> int | None:
    """The line of the user's script that launched the kernel (the innermost one)."""
    frame = sys._getframe(2)
    while frame is not None:
        if os.path.realpath(frame.f_code.co_filename) == script:
            return frame.f_lineno
        frame = frame.f_back
    return None


if __name__ == "__main__":
    sys.exit(main())
