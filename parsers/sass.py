"""SASS from `nvdisasm -g -c <cubin>` (or `cuobjdump -sass`), read into the shared ISA model.

nvdisasm prints, per kernel, a `.section .text.<name>` header, `//## File "...", line N`
before the instructions of each source line (`-gi` adds `inlined at "...", line M`),
`.L_x_N:` labels, and instructions as
        /*3aa0*/               @P2 STG.E.128 desc[UR18][R158.64], R64 ;
cuobjdump -sass prints `Function : <name>`, the same instructions with `/* 0x... */`
encodings after them, raw addresses as branch targets, and no source lines.

`line` numbers are lines of the disassembly text, not of the cubin. Kinds and widths are
in docs/isa-nvidia.md. Never raises on odd text (only a NUL byte is an ArtifactError).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from irscope.isa.model import (
    ASYNC_COPY, BARRIER, BRANCH, GLOBAL_ATOMIC, GLOBAL_LOAD, GLOBAL_STORE, LOCAL_LOAD, LOCAL_STORE, MATRIX,
    OTHER, SCALAR_ALU, SCALAR_LOAD, SHARED_ATOMIC, SHARED_LOAD, SHARED_STORE, VECTOR_ALU, WAIT, Instruction,
    IsaFunction, IsaProgram, MatrixOp, MemoryAccess, Operand, Unparsed, Wait,
)
from irscope.ir.llvm_ir import SourceLine
from irscope.model.kernel import Fact, Origin
from irscope.model.errors import ArtifactError
from irscope.parsers.isa_blocks import BlockBuilder

# 	//## File "/work/.../standard.py", line 43 inlined at "/tmp/.../gemm.py", line 31
_FILE_LINE = re.compile(r'"([^"]*)", line (\d+)')
# 	.section	.text.matmul_kernel,"ax",@progbits
_TEXT_SECTION = re.compile(r"\.section\s+\.text\.([^\s,]+)")
# 		Function : matmul_kernel
_CUOBJDUMP_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")
# 	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_ACCELERATORS EF_CUDA_SM90 ..."
_HEADER_ARCH = re.compile(r"EF_CUDA_SM(\d+)\b")
# 	.sectioninfo	@"SHI_REGISTERS=168"
_REGISTERS = re.compile(r"SHI_REGISTERS=(\d+)")
# @!P1 BRA `(.L_x_0)    BRA 0x2f40    CALL.REL.NOINC `(.L_x_2)
_TARGET = re.compile(r"`\(([^)]*)\)|^(0x[0-9a-fA-F]+)$")
# desc[UR26][R24.64+0x80], c[0x0][0x28], {5,4,3,2,1,0}: split at top-level commas
# An unclosed `[` or `{` (a cut or broken line) runs to the end of the operands: trying every
# `[` as a start that never closes made findall quadratic (10 s for a 100,000-character line).
_ARG = re.compile(r"(?:[^,\[{]|\[[^\]]*(?:\]|$)|\{[^}]*(?:\}|$))+")
# HGMMA.64x128x16.F32   HMMA.16816.F32   IMMA.16832.S8.S8
_GMMA_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)$")
_MMA_SHAPE = re.compile(r"^(16|8)(8)(\d+)$")
_REG = re.compile(r"^(UR|UP|R|P|B)(\d+)(?:\.(64|128))?$")

_WIDTHS = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "32": 4, "64": 8, "128": 16, "F64": 8, "S64": 8, "U64": 8}
_TYPE_BYTES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8, "S32": 4, "U32": 4}
_MATRIX_ROOTS = frozenset("""
    HMMA HGMMA IMMA IGMMA QGMMA BGMMA DMMA OMMA QMMA UTCHMMA UTCIMMA UTCQMMA UTCOMMA UTCMMA
""".split())
# Per-thread arithmetic, logic, conversion, moves and lane exchange.
_ALU_ROOTS = frozenset("""
    BFE BFI BMSK BREV CS2R DADD DFMA DMNMX DMUL DSETP F2F F2FP F2I FADD FADD32I FCHK FFMA FFMA32I FLO FMNMX
    FMUL FMUL32I FRND FSEL FSET FSETP FSWZADD HADD2 HFMA2 HMNMX2 HMUL2 HSET2 HSETP2 I2F I2FP I2I IABS IADD
    IADD3 IADD32I IDP IDP4A IMAD IMMA32I IMNMX IMUL ISCADD ISET ISETP LEA LOP LOP3 LOP32I MATCH MOV MOV32I
    MUFU P2R PLOP3 POPC PRMT PSETP R2P REDUX S2R SEL SGXT SHF SHFL SHL SHR VABSDIFF VIADD VIADDMNMX VIMNMX
    VOTE F2IP HMNMX DMNMX
""".split())
# The uniform datapath: one value per warp (like AMD's SALU).
_UNIFORM_ROOTS = frozenset("R2UR S2UR VOTEU UP2UR UR2UP".split())

# cuobjdump's banner lines (`code for sm_90a`, and for a fatbin `Fatbin elf code:`, `arch = sm_90a`, ...)
_CUOBJDUMP_HEADERS = ("code for", "Fatbin", "arch =", "code version", "host =", "compile_size", "producer",
                      "identifier", "=====")
_IN_FUNCTION_SKIP = (".align", ".global", ".type", ".size", ".other", ".sectionflags", ".sectioninfo",
                     ".headerflags", ".weak", ".zero", ".byte", ".short", ".word", ".dword")


class _Op(NamedTuple):
    kind: str
    memory: MemoryAccess | None = None
    matrix: MatrixOp | None = None
    wait: bool = False  # DEPBAR: counters come from the operands
    wait_fixed: Wait | None = None
    branch: int = 0  # 1: jump to the first operand; 2: call (comes back); 3: exit / return


def parse_sass(text: str, path: str) -> IsaProgram:
    """Every function of an nvdisasm (or cuobjdump -sass) listing as instructions and blocks."""
    nul = text.find("\0")
    if nul >= 0:
        raise ArtifactError(path, "contains NUL bytes (binary data?)", text.count("\n", 0, nul) + 1)
    reader = _Reader(path)
    reader.read(text)
    return IsaProgram(
        isa="sass", path=path, target=reader.target, functions=tuple(reader.functions), files=reader.files,
        facts=reader.facts, unparsed=tuple(reader.unparsed),
    )


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.target: str | None = None
        self.functions: list[IsaFunction] = []
        self.unparsed: list[Unparsed] = []
        self.facts: dict[str, Fact] = {}
        self.files: dict[int, str] = {}  # numbered in order of first appearance
        self.source_cache: dict[str, SourceLine | None] = {}

    def read(self, text: str) -> None:
        name: str | None = None
        fline = 0
        instrs: list[Instruction] = []
        lines: list[int] = []
        addresses: dict[int, int] = {}
        builder = BlockBuilder()
        source: SourceLine | None = None
        source_fresh = False  # a //## line since the last instruction (-gi prints two per instruction)
        unparsed = self.unparsed
        classify = _sass_class
        for lineno, raw in enumerate(text.splitlines(), 1):
            s = raw.strip()
            if not s:
                continue
            c = s[0]
            if c == "/" and s.startswith("/*"):
                close = s.find("*/")
                head = s[2:close].strip() if close > 0 else ""
                if head.startswith("0x") or not head:
                    continue  # cuobjdump's second encoding word: `/* 0x000ff00000000800 */`
                semi = s.find(";", close)
                if name is None or semi < 0:
                    unparsed.append(Unparsed(lineno, raw, "instruction without `;`" if name is not None else
                                             "instruction outside a function", name is not None))
                    continue
                pred, opcode, args = _statement(s[close + 2:semi])
                if not opcode:
                    unparsed.append(Unparsed(lineno, raw, "instruction without an opcode", True))
                    continue
                op = classify(opcode)
                index = len(instrs)
                try:
                    address = int(head, 16)
                except ValueError:
                    address = None
                if pred == "!PT":  # never executes: `@!PT LDS RZ, [RZ]` is padding
                    kind, memory, wait = OTHER, None, None
                else:
                    kind, memory, wait = op.kind, op.memory, _depbar_wait(args) if op.wait else op.wait_fixed
                    if op.branch:
                        _add_branch(builder, index, op.branch, args, pred)
                instrs.append(Instruction(index, lineno, opcode, args, kind, memory, wait, op.matrix, source,
                                          pred, address))
                lines.append(lineno)
                if address is not None:
                    addresses[address] = index
                source_fresh = False
                continue
            if c == "/":
                if s.startswith("//##"):
                    source = _kept_source(source, source_fresh, self._source(s))
                    source_fresh = True
                continue
            if s.endswith(":") and " " not in s:
                label = s[:-1]
                if name is not None:
                    builder.label(label, len(instrs), label.startswith(".L_x"))
                continue
            if c == ".":
                m = _TEXT_SECTION.match(s)
                if m is None:
                    if s.startswith((".section ", ".section\t")):  # a data section: the function has ended
                        name = self._ended(name, fline, instrs, lines, addresses, builder)
                    else:
                        self._directive(s, raw, lineno, name is not None)
                    continue
            else:
                m = _CUOBJDUMP_FUNCTION.match(s)
                if m is None:
                    self._other_line(s, raw, lineno, name is not None)
                    continue
            if name is not None:  # a function starts: `.text.NAME:` (nvdisasm) or `Function : NAME` (cuobjdump)
                self._finish(name, fline, instrs, lines, addresses, builder)
            name, fline = m[1], lineno
            instrs, lines, addresses, builder, source = [], [], {}, BlockBuilder(), None
        if name is not None:
            self._finish(name, fline, instrs, lines, addresses, builder)

    def _ended(self, name: str | None, line: int, instrs: list[Instruction], lines: list[int],
               addresses: dict[int, int], builder: BlockBuilder) -> None:
        """The function being read, if any, has ended: it is finished; no function is being read now."""
        if name is not None:
            self._finish(name, line, instrs, lines, addresses, builder)

    def _other_line(self, s: str, raw: str, lineno: int, in_function: bool) -> None:
        """A line that is no instruction, label, directive or function start: a cuobjdump header, or unknown."""
        if not s.startswith(_CUOBJDUMP_HEADERS):
            self.unparsed.append(Unparsed(lineno, raw, "not an instruction, label or directive", in_function))

    def _directive(self, s: str, raw: str, lineno: int, in_function: bool) -> None:
        """A `.` line that neither starts nor ends a function: the target, the register count, or unknown."""
        if s.startswith(".target"):
            self.target = s.split()[-1]  # a `.target` line wins over .headerflags
            self.facts.setdefault("sass_target", Fact(self.target, Origin(self.path, lineno, ".target")))
        elif s.startswith(".headerflags"):
            m = _HEADER_ARCH.search(s)
            if m and self.target is None:  # no `.target` line: EF_CUDA_SM90 + EF_CUDA_ACCELERATORS
                self.target = f"sm_{m[1]}" + ("a" if "EF_CUDA_ACCELERATORS" in s else "")
        elif s.startswith(".sectioninfo"):
            m = _REGISTERS.search(s)
            if m:
                self.facts.setdefault("registers", Fact(int(m[1]), Origin(self.path, lineno, "SHI_REGISTERS")))
        elif s.strip(".") and not s.startswith((".elftype", *_IN_FUNCTION_SKIP)):  # `......` separates
            self.unparsed.append(Unparsed(lineno, raw, "unknown directive", in_function))

    def _finish(self, name: str, line: int, instrs: list[Instruction], lines: list[int],
                addresses: dict[int, int], builder: BlockBuilder) -> None:
        # cuobjdump branches to raw addresses: make each target address a label
        for targets, _ in list(builder.branches.values()):
            for target in targets:
                if target.startswith("0x") and target not in builder.labels:
                    at = addresses.get(int(target, 16))
                    if at is not None:
                        builder.label(target, at)
        blocks, labels = builder.build(lines)
        self.functions.append(IsaFunction(name, line, tuple(instrs), blocks, labels))

    def _source(self, s: str) -> SourceLine | None:
        """`//## File "a.py", line 43 inlined at "b.py", line 31` -> b.py:31 with a.py:43 inlined."""
        found = self.source_cache.get(s, False)
        if found is not False:
            return found  # type: ignore[return-value]
        frames = []
        for f, ln in _FILE_LINE.findall(s):
            if f not in self.files.values():
                self.files[len(self.files) + 1] = f
            frames.append(SourceLine(f, int(ln), 0))
        source = SourceLine.from_frames(frames) if frames else None
        self.source_cache[s] = source
        return source


def _statement(text: str) -> tuple[str | None, str, tuple[str, ...]]:
    """`@!P0 BRA `(.L_x_1)` -> ("!P0", "BRA", ("`(.L_x_1)",)); the opcode is "" when there is none."""
    words = text.split(None, 1)
    pred = None
    if words and words[0][0] == "@":
        pred = words[0][1:]
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words:
        return pred, "", ()
    return pred, words[0], _split_args(words[1].strip()) if len(words) > 1 else ()


def _kept_source(source: SourceLine | None, fresh: bool, found: SourceLine | None) -> SourceLine | None:
    """-gi prints `File A, line 43 inlined at B, line 31` then `File B, line 31` for one instruction:
    of two //## lines in a row, the longer inline chain is kept."""
    if fresh and source is not None and found is not None and len(found.inlined) < len(source.inlined):
        return source
    return found


def _add_branch(builder: BlockBuilder, index: int, branch: int, args: tuple[str, ...], pred: str | None) -> None:
    """Instruction `index` branches (`branch`: 1 jump, 2 call, 3 exit or return); a predicate makes it conditional."""
    conditional = pred is not None and pred not in ("PT", "UPT")
    if branch == 3:
        builder.branch(index, (), conditional)
        return
    # `BRA.U !UP0, `(.L_x_1)` / `BRA.DIV UR4, ...`: an operand before the target is a condition
    targets = _targets(args)
    builder.branch(index, targets, conditional or len(args) > 1 or branch == 2 or not targets)


def _split_args(ops: str) -> tuple[str, ...]:
    if not ops:
        return ()
    if "[" not in ops and "{" not in ops:  # then no operand has a space inside
        return tuple(ops.replace(" ", "").split(","))
    return tuple(a.strip() for a in _ARG.findall(ops) if not a.isspace())


def _targets(args: tuple[str, ...]) -> tuple[str, ...]:
    for a in args:
        m = _TARGET.search(a)
        if m:
            return (m[1] or m[2],)
    return ()


def _depbar_wait(args: tuple[str, ...]) -> Wait | None:
    """`DEPBAR.LE SB0, 0x2` -> SB0 <= 2; `WARPGROUP.DEPBAR.LE gsb0, 0x1`; `DEPBAR {5,4,3,2,1,0}` -> each 0."""
    if not args:
        return None
    first = args[0]
    if first.startswith("{"):
        ids = [t.strip() for t in first.strip("{}").split(",") if t.strip().isdigit()]
        return Wait(tuple((f"SB{i}", 0) for i in ids))
    value = 0
    if len(args) > 1:
        try:
            value = int(args[1], 0)
        except ValueError:
            value = -1
    return Wait(((first, value),))


@lru_cache(maxsize=None)
def _memory(space: str, width: int | None, signed: bool) -> MemoryAccess:
    return MemoryAccess(space, width, signed=signed)


def _access(space: str, mods: list[str], default: int | None = 4) -> MemoryAccess:
    """`.128` = 16 bytes, `.64` = 8, `.U16`/`.S16` = 2, `.U8`/`.S8` = 1, `.F32x4` = 16, none = 4."""
    width = default
    signed = False
    for m in mods:
        if m in _WIDTHS:
            width = _WIDTHS[m]
            signed = m in ("S8", "S16")
        elif "x" in m:  # ATOMG.E.ADD.F32x4, RED.E.ADD.F16x2
            base, _, count = m.partition("x")
            if base in _TYPE_BYTES and count.isdigit():
                width = _TYPE_BYTES[base] * int(count)
        elif m in _TYPE_BYTES and width == default:
            width = _TYPE_BYTES[m]
    return _memory(space, width, signed)


# complex: a table-driven dispatcher on the opcode's root, one branch per opcode family (cached per opcode)
@lru_cache(maxsize=None)
def _sass_class(opcode: str) -> _Op:
    """Kind, memory access, matrix shape, wait and branch type of a SASS opcode (unknown: OTHER)."""
    parts = opcode.split(".")
    root = parts[0]
    mods = parts[1:]
    if root == "LDG":
        return _Op(GLOBAL_LOAD, _access("global", mods))
    if root == "STG":
        return _Op(GLOBAL_STORE, _access("global", mods))
    if root in ("ATOMG", "RED"):
        return _Op(GLOBAL_ATOMIC, _access("global", mods))
    if root == "ATOM":
        return _Op(GLOBAL_ATOMIC, _access("generic", mods))
    if root == "LD":
        return _Op(GLOBAL_LOAD, _access("generic", mods))
    if root == "ST":
        return _Op(GLOBAL_STORE, _access("generic", mods))
    if root == "LDS":
        return _Op(SHARED_LOAD, _access("shared", mods))
    if root == "STS":
        return _Op(SHARED_STORE, _access("shared", mods))
    if root == "ATOMS":
        return _Op(SHARED_ATOMIC, _access("shared", mods))
    if root in ("LDSM", "STSM"):
        # LDSM.16.M88.4 = ldmatrix .x4 of 8x8 b16 tiles: 4 registers (16 bytes) per thread; .2 = 8; .1 = 4
        count = int(mods[-1]) if mods and mods[-1] in ("1", "2", "4") else 1
        return _Op(SHARED_LOAD if root == "LDSM" else SHARED_STORE, _memory("shared", 4 * count, False))
    if root == "LDL":
        return _Op(LOCAL_LOAD, _access("local", mods))
    if root == "STL":
        return _Op(LOCAL_STORE, _access("local", mods))
    if root in ("LDC", "ULDC"):
        return _Op(SCALAR_LOAD, _access("const", mods))
    if root == "LDGSTS":
        return _Op(ASYNC_COPY, _access("global", mods))
    if root in ("UTMALDG", "UTMASTG", "UTMAREDG"):
        return _Op(ASYNC_COPY, _memory("tensor", None, False))
    if root == "UBLKCP":
        return _Op(ASYNC_COPY, _memory("bulk", None, False))
    if root in _MATRIX_ROOTS:
        return _Op(MATRIX, matrix=_matrix_op(root, mods))
    if root == "DEPBAR" or opcode.startswith("WARPGROUP.DEPBAR"):
        return _Op(WAIT, wait=True)
    if root == "SYNCS" and "TRYWAIT" in mods:  # mbarrier try_wait: blocks until the TMA bytes arrive
        return _Op(WAIT, wait_fixed=Wait((("mbarrier", 0),)))
    if root == "BAR":
        return _Op(BARRIER)
    if root in ("BRA", "BRX", "JMP", "JMX", "BRXU", "JMXU"):
        return _Op(BRANCH, branch=1)
    if root == "CALL":
        return _Op(BRANCH, branch=2)
    if root in ("EXIT", "RET", "KILL"):
        return _Op(BRANCH, branch=3)
    if root in _UNIFORM_ROOTS or (root[:1] == "U" and root[1:] in _ALU_ROOTS):  # root is "" for `.X`
        return _Op(SCALAR_ALU)
    if root in _ALU_ROOTS:
        return _Op(VECTOR_ALU)
    return _Op(OTHER)  # NOP, BSSY/BSYNC, WARPSYNC, MEMBAR, FENCE, LDGDEPBAR, WARPGROUP.ARRIVE, SYNCS, ...


def _matrix_op(root: str, mods: list[str]) -> MatrixOp:
    """HGMMA.64x128x16.F32 -> 64x128x16, out f32; HMMA.16816.F32 -> m16n8k16; HMMA.16816.F32.BF16 in bf16."""
    m = n = k = None
    types: list[str] = []
    for mod in mods:
        sm = _GMMA_SHAPE.match(mod) or _MMA_SHAPE.match(mod)
        if sm and m is None:
            m, n, k = int(sm[1]), int(sm[2]), int(sm[3])
        elif mod in _TYPE_BYTES or mod in ("S8", "U8", "S4", "U4", "E4M3", "E5M2", "TF32"):
            types.append(mod.lower())
    return MatrixOp(root.lower(), m, n, k, types[0] if types else None, types[1] if len(types) > 1 else None)


_SPECIAL = frozenset("RZ URZ PT UPT SRZ".split())
_SCOREBOARD = re.compile(r"^(?:SB|gsb)\d$")


@lru_cache(maxsize=4096)
def sass_operand(token: str) -> Operand:
    """`R12` -> reg "R" 12; `R24.64` -> R24..R25; `UR4`, `P0`, `UP0`, `B0`; `RZ`, `PT`, `SR_TID.X` special;
    `0x7f` literal; `` `(.L_x_0) `` label; `[R3+0x800]`, `desc[UR4][R2.64]`, `c[0x0][0x28]` address."""
    t = token.strip()
    core = t.lstrip("-!|~").rstrip("|")
    if core.endswith(".reuse"):
        core = core[:-6]
    if not core:
        return Operand("other", token)
    m = _REG.match(core)
    if m:
        count = 2 if m[3] == "64" else 4 if m[3] == "128" else 1
        return Operand("reg", token, first=int(m[2]), count=count, name=m[1])
    if core in _SPECIAL or core.startswith("SR_") or _SCOREBOARD.match(core):
        return Operand("special", token)
    c = core[0]
    if c.isdigit() or (c in "+-" and len(core) > 1) or core in ("INF", "QNAN", "+INF", "-INF", "NAN"):
        return Operand("literal", token)
    if c == "`" or core.startswith(".L_"):
        return Operand("label", token)
    if "[" in core:
        return Operand("address", token)
    return Operand("other", token)
