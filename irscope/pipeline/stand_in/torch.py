"""`torch.cuda` as a library sees it on the target's device, inside `scan script.py --target`.

Libraries ask torch about the GPU at import and at launch: `get_device_properties(x.device)
.multi_processor_count` to size a persistent grid, `get_device_capability()` to pick a code
path, `torch.version.hip` to pick AMD launch settings, `torch.cuda.device(i)` around a
launch. A CPU build of torch cannot answer, so those calls are answered here with the
target's usual device (irscope/pipeline/stand_in/devices.py), as a ROCm or CUDA build of torch would,
whatever device the question names. Every answer is counted in `Questions`, and the report
lists them.

Tensors a script puts on "cuda" are made on the CPU and say they live on the device
(`_keep_cuda_tensors_on_the_cpu`): `x.device` is cuda:0 and `x.is_cuda` is True, so a library that tests
`x.device.type == "cuda"` before asking the device's CU count takes the GPU's path and sizes
its grid from the target's, not from a default of 1. Nothing pretends to compute: kernels
launch and return, so the tensors hold whatever the CPU code wrote, never a kernel's result;
inside the stand-in do_bench, whose result is thrown away, matmuls are not computed either.
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any

from irscope.pipeline.stand_in.devices import StandInDevice

STAND_IN_MS = 1.0  # what a stand-in timing says: a constant, so the first config an autotuner tries wins
# Inside the stand-in `triton.testing.do_bench` (whose fn's result is thrown away) these torch ops on the
# stand-in's tensors return an uncomputed tensor of the right shape: a tutorial benchmarks cuBLAS with
# torch.matmul over sizes up to 8192, hours of fp16 math on a CPU, and no Triton kernel is in them.
BENCHED_MATH = ("matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "linear", "scaled_dot_product_attention")
_benchmarking = [False]


@contextlib.contextmanager
def benchmarking():
    """Within: BENCHED_MATH ops on stand-in tensors are not computed (the stand-in do_bench's fn runs here)."""
    before, _benchmarking[0] = _benchmarking[0], True
    try:
        yield
    finally:
        _benchmarking[0] = before


class Questions(Counter):
    """What the script asked the stand-in device: `torch.cuda.get_device_properties` -> 3."""

    def answer(self, question: str, value):
        self[question] += 1
        return value


class StandInStream:
    cuda_stream = 0  # the raw handle Triton and libraries read
    device_index = 0

    def synchronize(self):
        pass

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        return event or StandInEvent()

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class StandInEvent:
    """An event whose timings are the stand-in's constant: nothing ran, nothing was measured."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        pass

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return STAND_IN_MS


class DeviceProperties:
    """`torch.cuda.get_device_properties`'s answer: the fields ROCm and CUDA builds of torch give."""

    def __init__(self, device: StandInDevice):
        self.name = device.name
        self.major, self.minor = device.capability
        self.total_memory = device.total_memory
        self.multi_processor_count = device.compute_units
        self.warp_size = device.warp_size
        self.max_threads_per_multi_processor = device.max_threads_per_unit
        self.regs_per_multiprocessor = device.regs_per_unit
        self.shared_memory_per_block = min(device.max_shared, 49152) if device.backend == "cuda" else device.max_shared
        self.shared_memory_per_block_optin = device.max_shared
        self.shared_memory_per_multiprocessor = device.shared_per_unit
        self.L2_cache_size = device.l2_bytes
        self.clock_rate = device.sm_clock_khz
        self.memory_clock_rate = device.mem_clock_khz
        self.memory_bus_width = device.mem_bus_width
        self.gcnArchName = device.gcn_arch_name
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.uuid = "00000000-0000-0000-0000-000000000000"
        self.pci_bus_id = self.pci_device_id = self.pci_domain_id = 0

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"gcnArchName='{self.gcnArchName}', total_memory={self.total_memory >> 20}MB, "
                f"multi_processor_count={self.multi_processor_count}) [irscope stand-in]")


# The ROCm and CUDA versions a torch build of each vendor reports in torch.version.
HIP_VERSION = "6.4.43482-0f2d60242"
CUDA_VERSION = "12.8"


# torch's functions that take a `device=`: what a script allocates with. Each is wrapped so that
# "cuda" becomes the CPU and the tensor it returns says it is on the device.
FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange", "range", "linspace",
             "logspace", "eye", "tensor", "as_tensor", "asarray", "empty_strided", "scalar_tensor", "empty_like",
             "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like", "tril_indices",
             "triu_indices")
TENSOR_METHODS = ("to", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided")


def _keep_cuda_tensors_on_the_cpu(ask) -> None:
    """Make "cuda" allocations CPU tensors that say they live on cuda:0 (torch's own functions are
    wrapped, not a TorchFunctionMode: a mode is off inside the calls it handles, backward() among them).
    Pinned host memory (`pin_memory=True`, `t.pin_memory()`), which a CPU build of torch has no allocator
    for, is plain host memory: it only makes a copy to the GPU asynchronous, and nothing is copied here."""
    import torch

    devices = _CudaToCpu(torch, torch.device("cuda", 0), torch.device("cpu"))
    stand_in_tensor = _stand_in_tensor_class(torch, devices)
    for name in FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, _made_on_the_device(torch, devices, stand_in_tensor, ask, getattr(torch, name)))
    for name in TENSOR_METHODS:
        setattr(torch.Tensor, name, _made_on_the_device(torch, devices, stand_in_tensor, ask,
                                                        getattr(torch.Tensor, name), positional=name == "to"))
    _grads_on_the_device(torch, stand_in_tensor)
    torch.Tensor.pin_memory = lambda self, *args, **kwargs: ask("torch.Tensor.pin_memory", self)
    torch.Tensor.cuda = lambda self, *args, **kwargs: self if isinstance(self, stand_in_tensor) else \
        self.as_subclass(stand_in_tensor)
    # The first call of a torch.compile'd function runs its graph under a debug mode that checks custom ops
    # for aliasing and declines every tensor type it does not know, StandInTensor too: the call would fail.
    import torch._functorch.config

    if hasattr(torch._functorch.config, "check_custom_op_aliasing"):
        torch._functorch.config.check_custom_op_aliasing = False


@dataclass(frozen=True)
class _CudaToCpu:
    """Reads the device a call names and makes every "cuda" device the CPU."""

    torch: Any
    cuda0: Any
    cpu: Any

    def on_gpu(self, where) -> bool:
        if isinstance(where, self.torch.device):
            return where.type == "cuda"
        if isinstance(where, str):
            return where.startswith("cuda")
        return isinstance(where, int) and not isinstance(where, bool)  # torch reads device=0 as cuda:0

    def to_cpu(self, args, kwargs, positional: bool):
        """(args, kwargs, where asked: "gpu", "cpu" or None), every "cuda" device made the CPU.
        `positional`: Tensor.to(device, ...) names the device as its first argument after self."""
        asked = None
        if kwargs.get("device") is not None:
            asked = "gpu" if self.on_gpu(kwargs["device"]) else "cpu"
            kwargs = dict(kwargs, device=self.cpu) if asked == "gpu" else kwargs
        if positional and len(args) > 1 and not isinstance(args[1], (self.torch.dtype, self.torch.Tensor)) and \
                args[1] is not None:
            asked = "gpu" if self.on_gpu(args[1]) else "cpu"
            args = (args[0], self.cpu, *args[2:]) if asked == "gpu" else args
        return args, kwargs, asked


def _cuda_only_op(torch, func, args, kwargs):
    """The overload `func` calls when it is a `torch.ops` operator registered for CUDA and not for the
    CPU (`torch.library.impl(lib, name, "CUDA")`): the stand-in's tensors would dispatch to the CPU."""
    if isinstance(func, torch._ops.OpOverloadPacket) and not func._qualified_op_name.startswith("aten::"):
        try:
            func = getattr(func, torch._C._jit_resolve_packet(func._qualified_op_name, *args, **kwargs))
        except RuntimeError:
            return None
    if not isinstance(func, torch._ops.OpOverload) or func.namespace == "aten":
        return None
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return func if has(func.name(), "CUDA") and not has(func.name(), "CPU") else None


def _uncomputed(torch, stand_in_tensor, func, args, kwargs):
    """func's result as a stand-in tensor of its shape, dtype and strides, with its math not done."""
    def meta(x):
        return x.to("meta") if isinstance(x, torch.Tensor) else x

    with torch._C.DisableTorchFunctionSubclass():
        out = func(*[meta(a) for a in args], **{k: meta(v) for k, v in kwargs.items()})
        return torch.empty_strided(out.shape, out.stride(), dtype=out.dtype).as_subclass(stand_in_tensor)


def _stand_in_tensor_class(torch, devices: _CudaToCpu) -> type:
    """The tensor subclass the stand-in's "cuda" tensors are (made here: torch is imported only under --target)."""
    import torch.nn.functional
    from torch.utils._pytree import tree_map

    cuda0 = devices.cuda0
    on_cuda = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA) | torch._C.DispatchKeySet(
        torch._C.DispatchKey.AutogradCUDA)
    backward_calls = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)
    benched = {getattr(module, name) for module in (torch, torch.Tensor, torch.nn.functional)
               for name in BENCHED_MATH if hasattr(module, name)} | {torch.Tensor.__matmul__}

    class StandInTensor(torch.Tensor):
        """A CPU tensor that says it lives on the stand-in device; what ops make of it stays one."""

        device = property(lambda self: cuda0)
        is_cuda = property(lambda self: True)
        is_cpu = property(lambda self: False)

        def get_device(self):
            return 0

        def cuda(self, *args, **kwargs):
            return self

        def cpu(self, *args, **kwargs):
            return self.as_subclass(torch.Tensor)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in backward_calls:  # not under super()'s DisableTorchFunctionSubclass, which would last the
                # whole backward: a custom Function's backward then makes stand-in tensors, as on the GPU
                return func(*tree_map(plain, args), **tree_map(plain, kwargs or {}))
            if torch.compiler.is_compiling():  # dynamo traces this method: as under a forward, no subclass
                with torch._C.DisableTorchFunctionSubclass():  # (a backward's torch.compile'd helper, as in CCE)
                    return func(*args, **(kwargs or {}))
            args, kwargs, asked = devices.to_cpu(args, kwargs or {}, func is torch.Tensor.to)
            if _benchmarking[0] and func in benched and not kwargs.get("out"):
                return _uncomputed(torch, StandInTensor, func, args, kwargs)
            op = _cuda_only_op(torch, func, args, kwargs)
            if op is not None:  # a library's op with a CUDA kernel alone: a GPU build of torch dispatches to it,
                # through its autograd formula first (AutogradCUDA), so that its output has a grad_fn as on the GPU
                with torch._C.DisableTorchFunctionSubclass():
                    out = op.redispatch(on_cuda, *args, **kwargs)
                return torch._tensor._convert(out, cls)
            out = super().__torch_function__(func, types, args, kwargs)
            return out.as_subclass(torch.Tensor) if asked == "cpu" and isinstance(out, torch.Tensor) else out

    def plain(a):
        return a.as_subclass(torch.Tensor) if isinstance(a, StandInTensor) else a

    return StandInTensor


def _made_on_the_device(torch, devices: _CudaToCpu, stand_in_tensor: type, ask, make, positional=False):
    """`make` (a factory or a Tensor method) with "cuda" made the CPU and its tensor a stand-in one."""
    @functools.wraps(make)
    def on_the_device(*args, **kwargs):
        if kwargs.get("pin_memory"):
            kwargs = dict(kwargs, pin_memory=ask("torch pin_memory=True", False))
        args, kwargs, asked = devices.to_cpu(args, kwargs, positional)
        if asked != "gpu":
            return make(*args, **kwargs)
        grad = kwargs.pop("requires_grad", False)  # set on the subclass: as_subclass of a leaf is no leaf
        out = make(*args, **kwargs)
        if type(out) is torch.Tensor:
            out = out.detach().as_subclass(stand_in_tensor).requires_grad_(grad) if grad or not out.requires_grad \
                else out.as_subclass(stand_in_tensor)
        return out
    return on_the_device


def install_torch(device: StandInDevice, questions: Questions) -> None:
    """Answer `torch.cuda`'s device queries and set `torch.version` as a build for this vendor would."""
    import torch

    props = DeviceProperties(device)
    ask = questions.answer

    def answered(name, value):
        return lambda *args, **kwargs: ask(f"torch.cuda.{name}", value)

    class device_ctx(contextlib.nullcontext):  # torch.cuda.device(i) / device_of(t): one device, nothing to switch
        def __init__(self, which=None):
            ask("torch.cuda.device", None)
            super().__init__()

    cuda = torch.cuda
    for name, value in {
        "is_available": True, "device_count": 1, "current_device": 0, "get_device_properties": props,
        "get_device_capability": device.capability, "get_device_name": device.name,
        "get_arch_list": [device.arch],
        "is_bf16_supported": True, "mem_get_info": (device.total_memory, device.total_memory),
        "memory_allocated": 0, "max_memory_allocated": 0, "memory_reserved": 0, "max_memory_reserved": 0,
    }.items():
        setattr(cuda, name, answered(name, value))
    for name in ("set_device", "synchronize", "empty_cache", "reset_peak_memory_stats", "reset_max_memory_allocated",
                 "init", "ipc_collect"):
        setattr(cuda, name, answered(name, None))
    # The generator's state, which torch.compile saves and restores around tracing and fork_rng/checkpoint
    # around a region: a CPU uint8 tensor, 16 bytes of Philox seed and offset on CUDA and ROCm builds alike.
    rng = {"state": torch.zeros(16, dtype=torch.uint8)}

    def set_rng_state(new_state, device="cuda"):
        rng["state"] = ask("torch.cuda.set_rng_state", new_state.clone())

    cuda.get_rng_state = lambda device="cuda": ask("torch.cuda.get_rng_state", rng["state"].clone())
    cuda.set_rng_state = set_rng_state
    cuda.get_rng_state_all = lambda: [cuda.get_rng_state()]
    cuda.set_rng_state_all = lambda new_states: set_rng_state(new_states[0])
    # torch.cuda._DeviceGuard(i), which torch.compile's generated code enters: one device, so the one before is 0.
    cuda._exchange_device = lambda index: -1 if index < 0 else 0
    cuda._maybe_exchange_device = lambda index: -1 if index < 0 else 0  # its own function: dynamo keys on each
    cuda.current_stream = cuda.default_stream = lambda *a, **k: ask("torch.cuda.current_stream", StandInStream())
    cuda.Stream, cuda.Event = StandInStream, StandInEvent
    cuda.stream = lambda stream=None: contextlib.nullcontext(stream)
    cuda.device = cuda.device_of = device_ctx
    # The raw handle of the current stream, which libraries read from torch's C API: the default stream's, 0.
    torch._C._cuda_getCurrentRawStream = lambda device_index=0: ask("torch._C._cuda_getCurrentRawStream", 0)
    # torch.accelerator, which libraries ask which device type to use: "cuda" on CUDA and ROCm builds alike.
    accelerator = getattr(torch, "accelerator", None)  # torch 2.6+
    if accelerator is not None:
        _answer_accelerator(torch, accelerator, ask)
    # `torch.version.hip is not None` is how libraries tell a ROCm build (AMD launch settings).
    torch.version.hip = HIP_VERSION if device.backend == "hip" else None
    torch.version.cuda = CUDA_VERSION if device.backend == "cuda" else None
    _keep_cuda_tensors_on_the_cpu(ask)


def _grads_on_the_device(torch, on_device) -> None:
    """The gradients a custom autograd.Function's backward receives say they live on the device, as on the GPU.
    torch's C++ autograd nodes (sum's, expand's) make plain CPU tensors, and libraries check their grads
    (xformers' index_select_cat: `grad_output.is_cuda`); under --target a custom Function runs on "cuda" tensors."""
    from torch.autograd.function import BackwardCFunction

    def moved(args):
        return tuple(a.as_subclass(on_device) if type(a) is torch.Tensor else a for a in args)

    apply, apply_boxed = BackwardCFunction.apply, getattr(BackwardCFunction, "apply_boxed", None)
    BackwardCFunction.apply = lambda self, *args: apply(self, *moved(args))
    if apply_boxed is not None:  # boxed: the engine passes one list of grads
        BackwardCFunction.apply_boxed = lambda self, *args: apply_boxed(
            self, *(list(moved(a)) if isinstance(a, list) else a for a in args))


def _answer_accelerator(torch, accelerator, ask) -> None:
    """torch.accelerator, which libraries ask which device type to use: "cuda" on CUDA and ROCm builds alike."""
    accelerator.current_accelerator = lambda check_available=False: ask("torch.accelerator.current_accelerator",
                                                                        torch.device("cuda"))
    accelerator.is_available = lambda: ask("torch.accelerator.is_available", True)
    accelerator.device_count = lambda: ask("torch.accelerator.device_count", 1)
    accelerator.current_device_index = accelerator.current_device_idx = lambda: 0
    accelerator.set_device_index = accelerator.set_device_idx = accelerator.synchronize = lambda *a, **k: None
    # The default stream of cuda:0 (device_type 1 is CUDA, ROCm's too), which torch.compile's tracing asks for.
    accelerator.current_stream = lambda device=None: ask("torch.accelerator.current_stream",
                                                         torch.Stream(stream_id=0, device_index=0, device_type=1))
