"""In the child of `irscope scan script.py --profile`: Proton's session, and the scopes that tie each GPU
kernel Proton measures to the launch irscope recorded.

Proton (`triton.profiler`, in the Triton wheel since 3.0) times every kernel on the GPU through CUPTI
(NVIDIA) or roctracer/rocprofiler (AMD) and files it under the scopes open on the CPU when it was
launched. irscope opens one scope per launch, `irscope:launch:<n>`, where `n` is the launch's number in
the launches file: the parent (irscope/model/profile.py) reads each launch's time under its scope, and
every kernel under no irscope scope (cuBLAS, torch's own) is counted apart. Past MAX_LAUNCH_SCOPES
launches, a kernel's launches share one scope, `irscope:kernel:<hash>`: a script that launches a million
kernels gets a profile of bounded size.

While an autotuner times its configs, the session is paused (config_recorder.py): Proton's work on each
launch is CPU time, and do_bench's timing of a launch holds whatever CPU time exceeds the L2 flush it runs
before it. On an H100 that made the examples' matmul configs time 27% slower and the autotuner choose
another config than it does unprofiled (bench/profile_agreement.py). Paused, the autotuner times and
chooses as it does without irscope, and its own timings are in the report ("tuned ms"). Like
runner_child, this imports triton only when the child runs it.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

from irscope.parsers.proton import KERNEL_SCOPE, LAUNCH_SCOPE

MAX_LAUNCH_SCOPES = 20_000


class ProfileSession:
    """One Proton session for the whole script; `problem` says why there is none."""

    def __init__(self, path: str) -> None:
        self.path = path  # the profile Proton writes: `<path>.hatchet`
        self.proton = None
        self.session: int | None = None
        self.problem: str | None = None
        self.pauses = 0  # nested autotuner timings

    def start(self) -> bool:
        try:
            import triton.profiler as proton
        except ImportError as exc:
            self.problem = f"this Triton has no Proton (triton.profiler): {exc}"
            return False
        try:
            self.session = proton.start(str(Path(self.path)), context="shadow")
        except Exception as exc:  # noqa: BLE001 - no CUPTI/roctracer, an unknown backend: the run goes on unprofiled
            self.problem = f"Proton could not start: {' '.join(str(exc).split()) or type(exc).__name__}"
            return False
        self.proton = proton
        return True

    @contextmanager
    def scope(self, name: str) -> Iterator[None]:
        if self.proton is None or self.pauses:  # paused: not a call into Proton meanwhile
            yield
            return
        self.proton.enter_scope(name)
        try:
            yield
        finally:
            self.proton.exit_scope()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing recorded, and no CPU time spent on it, meanwhile (an autotuner timing its configs)."""
        if self.proton is None or self.pauses:
            self.pauses += 1
            try:
                yield
            finally:
                self.pauses -= 1
            return
        try:
            self.proton.deactivate(self.session)
        except Exception:  # noqa: BLE001 - a Proton without it: the timing goes on profiled
            yield
            return
        self.pauses += 1
        try:
            yield
        finally:
            self.pauses -= 1
            self.proton.activate(self.session)

    def launch_scope(self, number: int, kernel_hash: str | None):
        """The scope of launch `number`: its own, or past MAX_LAUNCH_SCOPES its kernel's."""
        if number <= MAX_LAUNCH_SCOPES:
            return self.scope(f"{LAUNCH_SCOPE}{number}")
        return self.scope(f"{KERNEL_SCOPE}{kernel_hash or ''}")

    def finish(self) -> str | None:
        """Write the profile; why it could not be written, or None."""
        if self.proton is None:
            return self.problem
        try:
            self.proton.finalize()
        except Exception as exc:  # noqa: BLE001 - the script's own outcome matters more
            return f"Proton could not write the profile: {' '.join(str(exc).split()) or type(exc).__name__}"
        finally:
            self.proton = None
        return None


def tensor_bytes(values) -> int | None:
    """The bytes of the distinct tensors among a launch's arguments (a view counts its own elements, not its
    storage's): the least a kernel that reads or writes each of them once must move. None when no argument
    is a tensor."""
    seen: dict[int, int] = {}
    for value in values:
        if not (hasattr(value, "data_ptr") and hasattr(value, "element_size") and hasattr(value, "numel")):
            continue
        try:
            seen.setdefault(int(value.data_ptr()), int(value.numel()) * int(value.element_size()))
        except Exception:  # noqa: BLE001 - a tensor-like object that is not one: not counted
            continue
    return sum(seen.values()) if seen else None


GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd")  # NVIDIA's driver, AMD's ROCm (KFD)


def no_gpu_here() -> str | None:
    """Why this machine cannot run a kernel, from its device nodes alone (no import of triton); None when one
    is there, or on a system without /dev (the child then finds out from Triton's driver)."""
    import os
    import sys

    if not sys.platform.startswith("linux") or any(os.path.exists(node) for node in GPU_DEVICE_NODES):
        return None
    return f"this machine has no GPU driver ({' or '.join(GPU_DEVICE_NODES)} is absent)"


class CounterSession:
    """`--profile=counters`: the child runs under Nsight Compute, started with `--profile-from-start off`, which
    profiles only between the driver's cuProfilerStart and cuProfilerStop. They are called here: on from the
    first launch, off while an autotuner times its configs (hundreds of launches Nsight Compute would replay
    one by one, none of them the script's work), on again at the next launch."""

    def __init__(self) -> None:
        self.cuda = None
        self.on = False
        self.pauses = 0
        self.problem: str | None = None

    def start(self) -> bool:
        import ctypes

        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            self.problem = f"the CUDA driver library (libcuda.so.1) could not be loaded: {exc}"
            return False
        return True

    def _switch(self, on: bool) -> None:
        if self.cuda is not None and on != self.on:
            (self.cuda.cuProfilerStart if on else self.cuda.cuProfilerStop)()
            self.on = on

    def launch_scope(self, number: int, kernel_hash: str | None):
        if not self.pauses:
            self._switch(True)
        return nullcontext()

    @contextmanager
    def paused(self) -> Iterator[None]:
        self.pauses += 1
        self._switch(False)
        try:
            yield
        finally:
            self.pauses -= 1

    def finish(self) -> str | None:
        self._switch(False)
        return self.problem
