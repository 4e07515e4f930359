"""What irscope reads from Triton's LLVM IR (`.llir`): functions, calls, memory accesses.

The `.llir` is the last IR Triton writes before the backend picks instructions, so it
shows what the kernel asks for: which matrix intrinsics (MFMA, WMMA, MMA, WGMMA), which
barriers and waits, and how wide each load and store is in which address space.
Every record carries its 1-based line in the `.llir`, and, where the file has `!dbg`
metadata, the kernel source line it came from. `irscope.parsers.llir` builds these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from irscope.model.kernel import Problem

# Families a call is sorted into (IntrinsicCall.family), from its intrinsic name or, for
# inline asm, its PTX mnemonic. The name itself is always kept; a family is only a bucket.
CALL_FAMILIES: tuple[str, ...] = (
    "mfma",            # llvm.amdgcn.mfma.*, smfmac
    "wmma",            # llvm.amdgcn.wmma.*, llvm.nvvm.wmma.*
    "mma",             # llvm.nvvm.mma.*, inline `mma.sync`
    "wgmma",           # `wgmma.mma_async` (Hopper warpgroup MMA)
    "wgmma_sync",      # wgmma fence / commit_group / wait_group
    "ldmatrix",        # llvm.nvvm.ldmatrix.*, inline `ldmatrix`
    "stmatrix",        # llvm.nvvm.stmatrix.*, inline `stmatrix`
    "transpose_load",  # llvm.amdgcn.ds.read.tr*: AMD's transposing LDS read (gfx950)
    "barrier",         # s.barrier (gfx12: s.barrier.signal), nvvm barrier0 / barrier.cta / bar.warp.sync, `bar.sync`
    "barrier_wait",    # gfx12 s.barrier.wait, the second half of a split barrier
    "waitcnt",         # llvm.amdgcn.s.waitcnt and friends: wait for memory counters
    "sched",           # sched.barrier, sched.group.barrier, s.setprio, iglp.opt: scheduling hints
    "async_copy",      # cp.async, amdgcn.global.load.async.lds, buffer.load.lds: memory to shared
    "async_wait",      # commit / wait of async copy groups, AMD asyncmark
    "tma",             # `cp.async.bulk.tensor`, nvvm cp.async.bulk.tensor intrinsics
    "mbarrier",        # `mbarrier.*`
    "tensormap",       # `tensormap.*` (TMA descriptor updates)
    "fence",           # `fence.*`, nvvm.fence.*
    "shuffle",         # cross-lane: DPP, ds.swizzle, ds.bpermute, readlane, permlane, shfl.sync
    "load",            # masked / buffer loads, inline `ld.*`
    "store",           # masked / buffer stores, inline `st.*`
    "atomic",          # buffer atomics, inline `atom.*` / `red.*`
    "id",              # workitem / workgroup ids, PTX special registers
    "math",            # exp2, maxnum, sqrt, div, ... and vector reductions
    "other",
)

CALL_KINDS = ("intrinsic", "function", "inline_asm")
MEMORY_KINDS = ("load", "store", "atomicrmw", "cmpxchg")


@dataclass(frozen=True)
class SourceLine:
    """A kernel source position from a `!dbg` location.

    `file`/`line`/`column` are the outermost frame: the line in the user's kernel. When
    the op came from a helper Triton inlined (e.g. `tl.cdiv` in triton/language/standard.py),
    `inlined` holds the helper frames, innermost first.
    """

    file: str  # directory + filename, as the DIFile wrote them
    line: int
    column: int
    inlined: tuple[SourceLine, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def from_frames(cls, frames: Sequence[SourceLine]) -> SourceLine:
        """[innermost, ..., outermost] -> the outermost frame, with the others as `inlined`."""
        outer = frames[-1]
        return cls(outer.file, outer.line, outer.column, tuple(frames[:-1]))


@dataclass(frozen=True)
class IntrinsicCall:
    """One `call` in a function body: an LLVM intrinsic, another function, or inline asm.

    `name` is the callee without `@` (`llvm.amdgcn.mfma.f32.32x32x8f16`), or for inline
    asm the PTX mnemonic that says what the asm does (`ld.global.v4.b32`, `mma.sync...`),
    skipping the `mov`s that zero outputs first.
    """

    name: str
    kind: str  # one of CALL_KINDS
    family: str  # one of CALL_FAMILIES
    line: int
    debug: SourceLine | None = None


@dataclass(frozen=True)
class MemoryOp:
    """One access to memory: a load/store/atomicrmw/cmpxchg instruction, or a call that is one.

    `via` is None for an IR instruction; otherwise the intrinsic (`llvm.masked.load.v8f16.p1`,
    `llvm.amdgcn.raw.ptr.buffer.load.v4i32`) or the PTX mnemonic of inline asm
    (`st.global.v4.b32`) that performs the access. Async copies (cp.async, TMA,
    global.load.async.lds) move memory to memory without registers: they are calls only.
    """

    kind: str  # one of MEMORY_KINDS
    address_space: int  # 0 generic/flat, 1 global, 3 shared (LDS), 4 constant, 5 private/local, 8 buffer resource
    space: str  # the address space's name on this backend
    value_type: str  # the loaded/stored type as written: '<4 x half>', 'float'; PTX: '.v4.b32'
    bits: int | None  # total width of the access per thread; None when the type is not sized
    alignment: int | None
    line: int
    debug: SourceLine | None = None
    via: str | None = None
    operation: str | None = None  # atomicrmw's operation: 'fadd', 'add', ...

    @property
    def bytes(self) -> int | None:
        return None if self.bits is None else self.bits // 8


@dataclass(frozen=True)
class LlvmFunction:
    """One `define` and what its body does.

    `attributes` holds the function's string attributes from its `#N` attribute group
    (`"amdgpu-flat-work-group-size"="1,256"`, `"nvvm.reqntid"="128"`, bare ones as "")
    and, for LLVM versions that still used them, its `!nvvm.annotations` entries, named
    `nvvm.<annotation>` (`nvvm.maxntidx`, `nvvm.reqntidx`, `nvvm.kernel`).
    `attribute_lines` gives the `.llir` line each attribute was read from.
    """

    name: str
    line: int
    end_line: int | None  # the closing `}`; None when the file ends inside the body
    calling_conv: str | None  # 'amdgpu_kernel', 'ptx_kernel'; None for the default (C)
    is_kernel: bool
    attributes: Mapping[str, str] = field(default_factory=dict, hash=False)
    attribute_lines: Mapping[str, int] = field(default_factory=dict, hash=False, compare=False, repr=False)
    calls: tuple[IntrinsicCall, ...] = ()
    memory_ops: tuple[MemoryOp, ...] = ()
    debug: SourceLine | None = None  # where the kernel is defined (its DISubprogram)

    def calls_in(self, family: str) -> tuple[IntrinsicCall, ...]:
        return tuple(c for c in self.calls if c.family == family)

    def memory_in(self, address_space: int, kind: str | None = None) -> tuple[MemoryOp, ...]:
        return tuple(op for op in self.memory_ops
                     if op.address_space == address_space and (kind is None or op.kind == kind))


@dataclass(frozen=True)
class LlvmModule:
    """A parsed `.llir` file. `problems` lists what could not be read; what could is kept."""

    path: str
    backend: str | None  # 'hip' or 'cuda' (as in model.Target), from triple, calling conv or intrinsics
    target_triple: str | None
    functions: tuple[LlvmFunction, ...]
    problems: tuple[Problem, ...] = ()

    @property
    def kernels(self) -> tuple[LlvmFunction, ...]:
        return tuple(f for f in self.functions if f.is_kernel)

    def function(self, name: str) -> LlvmFunction | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None
