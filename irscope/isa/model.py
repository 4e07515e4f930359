"""The instruction-level model shared by AMDGCN, PTX and SASS.

One vocabulary of instruction kinds covers the three ISAs, so the instruction mix, the
rules and the diff compare like with like: an AMD `global_load_dwordx4`, a PTX
`ld.global.v4.b32` and a SASS `LDG.E.128` are all a `global_load` of 16 bytes per lane.
The ISA-specific detail stays in `MemoryAccess.space` and the opcode.

Parsers (parsers/amdgcn.py, ptx.py, sass.py) build these values; irscope/isa/graph.py
builds the control-flow graph, loops and def-use on top; irscope/isa/mix.py counts.
Every value keeps the 1-based artifact line it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, NamedTuple

from irscope.ir.llvm_ir import SourceLine

# Instruction kinds. Memory kinds carry a MemoryAccess; WAIT a Wait; MATRIX a MatrixOp.
GLOBAL_LOAD = "global_load"        # global/buffer/flat loads; ld.global; LDG
GLOBAL_STORE = "global_store"      # global/buffer/flat stores; st.global; STG
GLOBAL_ATOMIC = "global_atomic"    # global/buffer/flat atomics; atom/red.global; ATOMG/RED
SHARED_LOAD = "shared_load"        # LDS reads (ds_read*, ds_load*); ld.shared, ldmatrix; LDS, LDSM
SHARED_STORE = "shared_store"      # LDS writes (ds_write*, ds_store*); st.shared, stmatrix; STS
SHARED_ATOMIC = "shared_atomic"    # LDS atomics (ds_add*, ...); atom.shared; ATOMS
ASYNC_COPY = "async_copy"          # global -> LDS/shared without registers: *_lds loads, cp.async, LDGSTS, TMA
LOCAL_LOAD = "local_load"          # scratch (private) loads; ld.local; LDL: spills and stack
LOCAL_STORE = "local_store"        # scratch stores; st.local; STL
SCALAR_LOAD = "scalar_load"        # s_load*/s_buffer_load*; ld.param/ld.const; LDC/ULDC
WAIT = "wait"                      # memory-counter waits: s_waitcnt, s_wait_*cnt; cp.async.wait_group; DEPBAR
BARRIER = "barrier"                # s_barrier; bar.sync/barrier; BAR
MATRIX = "matrix"                  # MFMA/SMFMAC/WMMA; mma/wgmma; HMMA/HGMMA/IMMA
BRANCH = "branch"                  # jumps, returns, program end
SCALAR_ALU = "scalar_alu"          # AMD SALU and other s_ instructions; SASS uniform datapath
VECTOR_ALU = "vector_alu"          # AMD VALU; PTX and SASS arithmetic
OTHER = "other"

MEMORY_KINDS = frozenset({
    GLOBAL_LOAD, GLOBAL_STORE, GLOBAL_ATOMIC, SHARED_LOAD, SHARED_STORE, SHARED_ATOMIC,
    ASYNC_COPY, LOCAL_LOAD, LOCAL_STORE, SCALAR_LOAD,
})
KINDS: tuple[str, ...] = (
    GLOBAL_LOAD, GLOBAL_STORE, GLOBAL_ATOMIC, SHARED_LOAD, SHARED_STORE, SHARED_ATOMIC, ASYNC_COPY,
    LOCAL_LOAD, LOCAL_STORE, SCALAR_LOAD, WAIT, BARRIER, MATRIX, BRANCH, SCALAR_ALU, VECTOR_ALU, OTHER,
)


@dataclass(frozen=True, slots=True)
class MemoryAccess:
    """What one memory instruction moves, per lane (AMD) or per thread (NVIDIA).

    `space` is the ISA's own name for the path: AMD "global", "buffer", "flat", "scratch",
    "lds", "smem"; PTX and SASS "global", "shared", "local", "param", "const", "generic",
    "tensor" (TMA) and "bulk" (cp.async.bulk).
    `width_bytes` is one access; `accesses` is 2 for ds_read2/ds_write2 (two accesses of
    the stated width). None when the width is not in the instruction (TMA bulk copies).
    """

    space: str
    width_bytes: int | None
    accesses: int = 1
    signed: bool = False  # sign-extending loads: sbyte, sshort, LDG.E.S16
    to_lds: bool = False  # direct-to-LDS forms (buffer_load ... lds, global_load_lds_*)

    @property
    def total_bytes(self) -> int | None:
        return None if self.width_bytes is None else self.width_bytes * self.accesses


@dataclass(frozen=True, slots=True)
class Wait:
    """The counter values a wait instruction waits down to.

    AMD: vmcnt, expcnt, lgkmcnt, vscnt (gfx10/11); loadcnt, storecnt, samplecnt, bvhcnt,
    dscnt, kmcnt (gfx12). A counter the instruction does not name is not waited on.
    NVIDIA: async_group (cp.async.wait_group), wgmma_group (wgmma.wait_group), bulk_group,
    mbarrier (mbarrier.try_wait, SASS SYNCS...TRYWAIT; value 0), and SASS scoreboards
    (SB0..SB5, gsb0) from DEPBAR. Source columns are 0 in SASS (nvdisasm prints none).
    """

    counters: tuple[tuple[str, int], ...]

    def get(self, counter: str) -> int | None:
        for name, value in self.counters:
            if name == counter:
                return value
        return None


@dataclass(frozen=True, slots=True)
class MatrixOp:
    """A matrix instruction's shape and types, read from its opcode.

    family: "mfma", "smfmac", "wmma" (AMD); "mma", "wgmma" (PTX); "hmma", "hgmma", "imma" ...
    (SASS, lower-cased opcode). `blocks` is the `_Nb` multi-block count of older MFMAs.
    Types are as the opcode spells them (f16, bf16, fp8, f8f6f4, tf32, ...); None when the
    opcode does not say (SASS).
    """

    family: str
    m: int | None
    n: int | None
    k: int | None
    out_type: str | None = None
    in_type: str | None = None
    blocks: int = 1

    @property
    def shape(self) -> str:
        return "x".join("?" if d is None else str(d) for d in (self.m, self.n, self.k))


class Instruction(NamedTuple):
    """One machine (or PTX) instruction.

    `index` is its position in the function's instruction stream; `args` are the operand
    tokens as written (registers, literals, labels, modifiers such as `offset:16`, `sc0`);
    the ISA's module turns a token into a typed Operand when asked.

    A named tuple rather than a dataclass: a kernel has thousands of instructions, and a
    frozen dataclass costs 2-3 us each to build (one object.__setattr__ per field) where a
    tuple costs 0.1 us (parsers/amdgcn.py builds them with tuple.__new__). Fields, repr,
    hash and immutability read as the dataclass did.
    """

    index: int
    line: int
    opcode: str
    args: tuple[str, ...]
    kind: str
    memory: MemoryAccess | None = None
    wait: Wait | None = None
    matrix: MatrixOp | None = None
    source: SourceLine | None = None
    predicate: str | None = None  # PTX `@%p1`, SASS `@!P0`
    address: int | None = None  # SASS code offset

    @property
    def text(self) -> str:
        head = f"@{self.predicate} " if self.predicate else ""
        return f"{head}{self.opcode} {' '.join(self.args)}".rstrip()


def _dataclass_protocol(cls: type) -> None:
    """Give a NamedTuple the fields that dataclasses.fields / replace / asdict read, taken from
    a frozen dataclass twin with the same annotations and defaults, so that code written for
    the dataclass (parsers/ptx.py replaces `source`) keeps working."""
    namespace = {"__annotations__": dict(cls.__annotations__), **cls._field_defaults}
    twin = dataclass(frozen=True)(type(cls.__name__, (), namespace))
    cls.__dataclass_fields__ = twin.__dataclass_fields__
    cls.__dataclass_params__ = twin.__dataclass_params__


_dataclass_protocol(Instruction)


@dataclass(frozen=True, slots=True)
class Operand:
    """A typed operand token.

    kind: "vgpr", "agpr", "sgpr", "ttmp" (AMD register ranges), "reg" (PTX `%r1`, SASS
    `R4`/`UR4`/`P0`), "special" (vcc, exec, m0, off, null, scc, SASS RZ/PT/SR_*),
    "literal", "label", "modifier" (`offset:16`, `glc`, `sc0`, `lds`), "address"
    (`[%rd1+8]`, `desc[UR4][R2.64]`), "other".
    `first`/`count` give a register range (v[4:7] is first 4, count 4).
    """

    kind: str
    text: str
    first: int | None = None
    count: int = 1
    name: str | None = None  # the modifier's name, or the register file of a PTX/SASS register

    def units(self) -> tuple[str, ...]:
        """Register units for def-use: v[4:5] -> ("v4", "v5")."""
        if self.first is None:
            return ()
        prefix = {"vgpr": "v", "agpr": "a", "sgpr": "s", "ttmp": "ttmp"}.get(self.kind, self.name or "")
        return tuple(f"{prefix}{self.first + i}" for i in range(self.count))


class BasicBlock(NamedTuple):
    """Instructions [start, end) of a function; `label` is the branch target name if any.

    A named tuple with the dataclass protocol, as Instruction is: kernels have hundreds of blocks."""

    index: int
    start: int
    end: int
    line: int
    label: str | None = None
    successors: tuple[int, ...] = ()
    loop_hint: int | None = None  # `Loop Header: Depth=N` / `in Loop: ... Depth=N` comment; a hint only


_dataclass_protocol(BasicBlock)


@dataclass(frozen=True, slots=True)
class Unparsed:
    """A line the parser could not place; counted, never fatal."""

    line: int
    text: str
    reason: str
    in_code: bool  # inside a function body (the instruction stream) rather than data/metadata


@dataclass(frozen=True)
class IsaFunction:
    name: str
    line: int
    instructions: tuple[Instruction, ...]
    blocks: tuple[BasicBlock, ...]
    labels: Mapping[str, int] = field(default_factory=dict)  # label -> block index

    def block_of(self, instruction: int) -> BasicBlock:
        lo, hi = 0, len(self.blocks) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.blocks[mid].start <= instruction:
                lo = mid
            else:
                hi = mid - 1
        return self.blocks[lo]


@dataclass(frozen=True, eq=False)
class IsaProgram:
    """A parsed assembly file: its functions plus what the ISA's directives say.

    `facts` holds directive values keyed by name, each with its line: for AMDGCN the
    `.amdhsa_*` descriptor fields and the `; Kernel info` comments (`info.NumVgprs`), for
    PTX `.version`/`.target`/`.reqntid`/`.maxnreg`, for SASS the resource usage.
    """

    isa: str  # "amdgcn", "ptx", "sass"
    path: str
    target: str | None
    functions: tuple[IsaFunction, ...]
    files: Mapping[int, str]  # `.file` number -> path
    facts: Mapping[str, object]  # name -> Fact
    unparsed: tuple[Unparsed, ...] = ()
    metadata_text: str | None = None  # the amdhsa YAML block, for irscope.amdgcn_metadata
    metadata_line: int | None = None

    @property
    def unparsed_in_code(self) -> tuple[Unparsed, ...]:
        return tuple(u for u in self.unparsed if u.in_code)

    def function(self, name: str | None = None) -> IsaFunction | None:
        if name is None:
            return self.functions[0] if self.functions else None
        return next((f for f in self.functions if f.name == name), None)
