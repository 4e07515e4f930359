"""The child process of `irscope scan script.py`: record launches, then run the script.

Run as `python -m irscope.runner_child --launches FILE [--target ARCH] SCRIPT [ARGS...]`
with TRITON_CACHE_DIR pointing at irscope's temporary cache. With --target it installs the
stand-in driver (every launch compiles for ARCH and runs nothing); without, the real driver
runs the kernels and its launcher is wrapped the same way. Each launch is appended to FILE
as one JSON line the moment it happens, so a script that fails later still leaves them.
The script runs as `__main__` with its own argv; its output and traceback are its own.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import traceback


def main() -> int:
    parser = argparse.ArgumentParser(prog="irscope.runner_child")
    parser.add_argument("--launches", required=True)
    parser.add_argument("--target")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    script = os.path.realpath(opts.script)
    sink = open(opts.launches, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process

    def on_launcher(metadata, launch):
        def recording(grid_x, grid_y, grid_z, *rest, **kwargs):
            line = _script_line(script)
            sink.write(json.dumps({
                "hash": getattr(metadata, "hash", None), "name": getattr(metadata, "name", None),
                "grid": [int(grid_x), int(grid_y), int(grid_z)],
                "num_warps": getattr(metadata, "num_warps", None), "num_stages": getattr(metadata, "num_stages", None),
                "shared": getattr(metadata, "shared", None), "compute_units": _compute_units(),
                "path": script if line else None, "line": line,
            }) + "\n")
            return launch(grid_x, grid_y, grid_z, *rest, **kwargs)
        return recording

    try:
        import triton  # noqa: F401 - the script needs it; fail here with a clear message
    except ImportError:
        print("irscope: the script's Python has no triton (pip install triton)", file=sys.stderr)
        return 3
    if opts.target:
        from irscope.stand_in_driver import install

        try:
            install(opts.target, on_launcher)
        except RuntimeError as exc:
            print(f"irscope: {exc}", file=sys.stderr)
            return NO_DRIVER
    else:
        try:
            _wrap_real_driver(on_launcher)
        except RuntimeError as exc:  # Triton: "0 active drivers ([]). There should only be one."
            print(f"irscope: no GPU driver is active here ({exc}); give --target ARCH to compile for a target "
                  "without running", file=sys.stderr)
            return NO_DRIVER
    sys.argv = [opts.script, *opts.args]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(opts.script, run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - the script's own traceback, as Python prints it
        tb = exc.__traceback__
        while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != script:
            tb = tb.tb_next  # drop irscope's and runpy's frames: the traceback starts in the script
        traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        return 1
    return 0


NO_DRIVER = 4  # the runner turns this into a usage error
_UNITS: list[int] = []


def _compute_units() -> int | None:
    """CUs/SMs of the device: the stand-in's table entry, or the real device's count."""
    if not _UNITS:
        from triton.runtime import driver

        active = driver.active
        units = getattr(active, "compute_units", None)
        if units is None:
            try:
                props = active.utils.get_device_properties(active.get_current_device())
                units = props.get("multiprocessor_count")
            except Exception:  # noqa: BLE001 - unknown on this driver: the grid rule stays silent
                units = None
        _UNITS.append(units)
    return _UNITS[0]


def _wrap_real_driver(on_launcher) -> None:
    from triton.runtime import driver

    active = driver.active
    real = active.launcher_cls
    active.launcher_cls = lambda src, metadata: on_launcher(metadata, real(src, metadata))


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
