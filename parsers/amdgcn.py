"""A line-level parser for AMDGCN assembly as Triton 3.0-3.9 write it (`<kernel>.amdgcn`).

One pass over the lines. Each line is one of: blank or comment, a label, a directive, an
instruction. What the pass keeps:
- instructions (mnemonic, operand tokens, kind, memory width, wait counters, MFMA shape)
  with the Python line of the `.loc` in force, resolved through `.file`; 3.2+ append the
  inline chain as a comment (`; standard.py:43:17 @[ gemm.py:32:27 ]`), which gives the
  user's line for code Triton inlined from its library;
- labels and branches, cut into basic blocks by parsers/isa_blocks.py;
- the `.amdhsa_kernel` descriptor fields, the `; Kernel info:` comments (3.2+) and the
  text of the `amdhsa.kernels` YAML, each with its line, as facts.
A line it cannot place becomes an `Unparsed` node; the file never fails as a whole.
"""

from __future__ import annotations

import re

from irscope import isa
from irscope.isa import Instruction, IsaFunction, IsaProgram, MemoryAccess, Unparsed
from irscope.llvm_ir import SourceLine
from irscope.model import Fact, Origin
from irscope.parsers import amdgcn_opcodes as ops
from irscope.parsers.asm_source import by_basename, call_sites
from irscope.parsers.errors import ArtifactError
from irscope.parsers.isa_blocks import BlockBuilder

_ARGS = re.compile(r"\w+:\[[^\]]*\]|[^\s,]+")
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*$")
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"((?:[^"\\]|\\.)*)")?')
_DEPTH = re.compile(r"Depth=(\d+)")
# `; NumVgprs: 152`, `; codeLenInByte = 8160`, `; COMPUTE_PGM_RSRC2:SCRATCH_EN: 0`
_INFO = re.compile(r"^;\s*([A-Za-z][^=]*?)(?::\s+|\s*=\s*)(\S.*?)\s*$")
_TYPE_FUNCTION = re.compile(r"^\.type\s+([\w.$]+)\s*,\s*@function")
_TARGET = re.compile(r'^\.amdgcn_target\s+"([^"]*)"')
_GFX = re.compile(r"gfx\w+")
_PRIVATE_SEGMENT_IN_SGPRS = re.compile(r"\.amdhsa_user_sgpr_private_segment_buffer\s+1\b")


class _Function:
    """A function while its lines are read."""

    def __init__(self, name: str, line: int, private_segment_in_sgprs: bool) -> None:
        self.name = name
        self.line = line
        self.instructions: list[Instruction] = []
        self.lines: list[int] = []
        self.blocks = BlockBuilder()
        # SGPRs that hold the scratch buffer descriptor: buffer ops through them are spills
        # (gfx90a spills with `buffer_store_dword v0, off, s[72:75], 0`). The descriptor
        # arrives in s[0:3] when the kernel descriptor says private_segment_buffer 1.
        self.scratch_rsrc: set[str] = {"s0", "s1", "s2", "s3", "s[0:3]"} if private_segment_in_sgprs else set()

    def finish(self) -> IsaFunction:
        blocks, labels = self.blocks.build(self.lines)
        return IsaFunction(self.name, self.line, tuple(self.instructions), blocks, labels)


class AmdgcnParser:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.arch: str | None = None
        self.files: dict[int, str] = {}
        self.facts: dict[str, Fact] = {}
        self.unparsed: list[Unparsed] = []
        self.functions: list[IsaFunction] = []
        self.function_names: set[str] = set()
        self.current: _Function | None = None
        self.raw_loc: tuple[int, int, int, str] | None = None  # file no, line, column, comment
        self.sources: dict[tuple[int, int, int, str], SourceLine | None] = {}
        self.private_segment_in_sgprs = bool(_PRIVATE_SEGMENT_IN_SGPRS.search(text))
        self.pending_hint: int | None = None
        self.metadata_start: int | None = None  # set while inside the YAML block
        self.metadata_line: int | None = None
        self.metadata_lines: list[str] = []
        self.in_descriptor = False
        self.in_kernel_info = False

    def parse(self) -> IsaProgram:
        for lineno, raw in enumerate(self.text.split("\n"), 1):
            line = raw.strip()
            if not line:
                continue
            if self.metadata_start is not None:
                self._metadata_line(raw, line, lineno)
            elif line[0] == ";":
                self._comment(line, lineno)
            elif line[0] == ".":
                self._dot_line(line, lineno)
            else:
                self._code_line(line, lineno)
        self._end_function()
        if self.metadata_start is not None:  # truncated inside the YAML: keep what was read
            self.unparsed.append(Unparsed(self.metadata_start, ".amdgpu_metadata", "no .end_amdgpu_metadata", False))
        return IsaProgram(
            isa="amdgcn", path=self.path, target=self.arch, functions=tuple(self.functions),
            files=dict(self.files), facts=dict(self.facts), unparsed=tuple(self.unparsed),
            metadata_text="\n".join(self.metadata_lines) if self.metadata_lines else None,
            metadata_line=self.metadata_line,
        )

    # ---- line kinds ---------------------------------------------------------------

    def _comment(self, line: str, lineno: int) -> None:
        fn = self.current
        if line.startswith("; %bb.") and fn is not None:  # a block LLVM did not need to label
            fn.blocks.block_start(len(fn.instructions))
            self._depth_hint(line)
        elif line.startswith("; Kernel info:"):
            self.in_kernel_info = True
        elif self.in_kernel_info:
            m = _INFO.match(line)
            if m:
                key = m[1].strip()
                self.facts.setdefault(f"info.{key}", Fact(_number(m[2]), Origin(self.path, lineno, f"; {key}")))

    def _dot_line(self, line: str, lineno: int) -> None:
        self.in_kernel_info = False
        head = line.split(None, 1)[0]
        if head.endswith(":"):
            self._label(head[:-1], line, lineno)
            return
        if head == ".loc":
            m = _LOC.match(line)
            if m:
                _, _, comment = line.partition(";")
                self.raw_loc = (int(m[1]), int(m[2]), int(m[3]), comment)
        elif head == ".file":
            m = _FILE.match(line)
            if m:
                self.files[int(m[1])] = f"{m[2]}/{m[3]}" if m[3] is not None else m[2]
        elif self.in_descriptor:
            if head == ".end_amdhsa_kernel":
                self.in_descriptor = False
            else:
                value = line[len(head):].split(";", 1)[0].strip()
                self.facts.setdefault(head, Fact(_number(value), Origin(self.path, lineno, head)))
        elif head == ".amdhsa_kernel":
            self.in_descriptor = True
        elif head == ".amdgpu_metadata":
            self.metadata_start = self.metadata_line = lineno
        elif head == ".type":
            m = _TYPE_FUNCTION.match(line)
            if m:
                self.function_names.add(m[1])
        elif head == ".amdgcn_target":
            m = _TARGET.match(line)
            gfx = _GFX.search(m[1]) if m else None
            if gfx:
                self.arch = gfx[0]
                self.facts.setdefault("target", Fact(gfx[0], Origin(self.path, lineno, ".amdgcn_target")))
        elif head in (".section", ".text", ".data", ".rodata", ".bss") or head.startswith(".size"):
            if head != ".text" or self.current is None:
                self._end_function()

    def _label(self, name: str, line: str, lineno: int) -> None:
        fn = self.current
        if name in self.function_names:
            self._end_function()
            self.current = _Function(name, lineno, self.private_segment_in_sgprs)
            return
        if fn is None:
            return
        if name.startswith(".Lfunc_end"):
            self._end_function()
            return
        at = len(fn.instructions)
        # .LBB0_3 is a basic block; .Ltmp4 and .Lfunc_begin0 mark debug ranges only.
        fn.blocks.label(name, at, starts_block=name.startswith(".LBB") or not name.startswith(".L"))
        self._depth_hint(line)

    def _code_line(self, line: str, lineno: int) -> None:
        self.in_kernel_info = False
        code, _, _comment = line.partition(";")
        head, _, rest = code.rstrip().partition(" ")
        if "\t" in head:
            head, _, more = head.partition("\t")
            rest = f"{more} {rest}"
        if head.endswith(":") and not rest.strip():
            self._label(head[:-1], line, lineno)
            return
        fn = self.current
        mnemonic = head
        if fn is None or not _MNEMONIC.match(mnemonic) or not mnemonic.startswith(ops.KNOWN_PREFIXES):
            reason = "not an AMDGCN instruction" if fn is not None else "outside any function"
            self.unparsed.append(Unparsed(lineno, line, reason, fn is not None))
            return
        args = tuple(_ARGS.findall(rest))
        kind, memory, matrix = ops.classify(mnemonic)
        if memory is not None and memory.space == "buffer":
            kind, memory = self._buffer_access(fn, kind, memory, args)
        wait = ops.parse_wait(mnemonic, args, self.arch) if kind == isa.WAIT else None
        index = len(fn.instructions)
        if kind == isa.BRANCH:
            targets = tuple(a for a in args if a.startswith(".L"))
            fn.blocks.branch(index, targets, falls_through=mnemonic.startswith("s_cbranch_"))
        elif fn.scratch_rsrc and args and kind in (isa.SCALAR_ALU, isa.VECTOR_ALU, isa.SCALAR_LOAD):
            self._track_scratch_rsrc(fn, mnemonic, args)
        fn.instructions.append(Instruction(
            index=index, line=lineno, opcode=mnemonic, args=args, kind=kind, memory=memory, wait=wait,
            matrix=matrix, source=self._source(),
        ))
        fn.lines.append(lineno)

    def _metadata_line(self, raw: str, line: str, lineno: int) -> None:
        if line.startswith(".end_amdgpu_metadata"):
            self.metadata_start, start = None, self.metadata_start
            self.facts.setdefault("metadata", Fact(start, Origin(self.path, start, ".amdgpu_metadata")))
        else:
            self.metadata_lines.append(raw)

    # ---- helpers --------------------------------------------------------------------

    def _end_function(self) -> None:
        if self.current is not None:
            self.functions.append(self.current.finish())
            self.current = None

    def _depth_hint(self, line: str) -> None:
        fn = self.current
        if fn is not None and "Depth=" in line:
            m = _DEPTH.search(line)
            if m:
                fn.blocks.hint(len(fn.instructions), int(m[1]))

    def _buffer_access(self, fn: _Function, kind: str, memory: MemoryAccess, args: tuple[str, ...]):
        if "lds" in args and kind == isa.GLOBAL_LOAD:  # buffer_load_dword ... lds: straight into LDS
            return isa.ASYNC_COPY, MemoryAccess("buffer", memory.width_bytes, to_lds=True)
        if fn.scratch_rsrc and any(a in fn.scratch_rsrc for a in args):
            local = {isa.GLOBAL_LOAD: isa.LOCAL_LOAD, isa.GLOBAL_STORE: isa.LOCAL_STORE}.get(kind, kind)
            return local, MemoryAccess("scratch", memory.width_bytes, signed=memory.signed)
        return kind, memory

    def _track_scratch_rsrc(self, fn: _Function, mnemonic: str, args: tuple[str, ...]) -> None:
        """Follow the private segment buffer descriptor from s[0:3], in code order, through
        the scalar ops that copy or offset it (`s_mov_b64 s[72:73], s[0:1]`, `s_add_u32 s72,
        s72, s17`); an SGPR overwritten from anything else stops being part of it."""
        dst = ops.operand(args[0])
        if dst.kind != "sgpr":
            return
        units = set(dst.units())
        derived = mnemonic.startswith("s_") and any(
            u in fn.scratch_rsrc for a in args[1:] for u in ops.operand(a).units())
        if derived:
            fn.scratch_rsrc |= units
        else:
            fn.scratch_rsrc -= units
        fn.scratch_rsrc -= {q for q in fn.scratch_rsrc if q.startswith("s[")}
        numbers = {int(u[1:]) for u in fn.scratch_rsrc}
        for base in {n - n % 4 for n in numbers}:  # addressed as an aligned quad: s[72:75]
            if all(base + i in numbers for i in range(4)):
                fn.scratch_rsrc.add(f"s[{base}:{base + 3}]")

    def _source(self) -> SourceLine | None:
        raw = self.raw_loc
        if raw is None:
            return None
        if raw in self.sources:
            return self.sources[raw]
        file_no, line, column, comment = raw
        source = None
        if line != 0:
            inner = SourceLine(self.files.get(file_no, f"<file {file_no}>"), line, column)
            paths = by_basename(self.files.values())
            chain = [SourceLine(paths.get(name, name), ln, col) for name, ln, col in call_sites(comment)]
            source = SourceLine.from_frames([inner, *chain])
        self.sources[raw] = source
        return source


def parse_amdgcn(text: str, path: str) -> IsaProgram:
    """Parse one `.amdgcn` file; never raises for its content (see Unparsed)."""
    return AmdgcnParser(text, path).parse()


def _number(value: str):
    try:
        return int(value, 0)
    except ValueError:
        return value


def read_metadata(program: IsaProgram) -> dict:
    """The `amdhsa.kernels` code-object metadata as a dict (the YAML the loader reads).

    Raises ArtifactError naming the line when the YAML is broken.
    """
    if program.metadata_text is None:
        return {}
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(program.metadata_text, Loader=loader)
    except yaml.YAMLError as exc:
        # The context mark is where the broken construct began (an unclosed `[`); the
        # problem mark is where the parser gave up, often the end of the block.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = (program.metadata_line or 0) + (mark.line + 1 if mark is not None else 0)
        what = " ".join(p for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p)
        raise ArtifactError(program.path, f"amdhsa metadata is not valid YAML: {what or exc}", line or None) from None
    return data if isinstance(data, dict) else {}
