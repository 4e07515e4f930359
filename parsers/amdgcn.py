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

from irscope.isa import model as isa
from irscope.isa.model import Instruction, IsaFunction, IsaProgram, MemoryAccess, Unparsed
from irscope.ir.llvm_ir import SourceLine
from irscope.model.kernel import Fact, Origin
from irscope.parsers import amdgcn_opcodes as ops
from irscope.parsers.asm_source import by_basename, call_sites
from irscope.model.errors import ArtifactError
from irscope.parsers.gc_pause import collections_paused
from irscope.parsers.isa_blocks import BlockBuilder

_ARGS = re.compile(r"\w+:\[[^\]]*\]|[^\s,]+")
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*$")
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s+"((?:[^"\\]|\\.)*)")?')
_DEPTH = re.compile(r"Depth=(\d+)")
# `; NumVgprs: 152`, `; codeLenInByte = 8160`, `; COMPUTE_PGM_RSRC2:SCRATCH_EN: 0`
# `; TotalNumSgprs: 38`, `; codeLenInByte = 1424`, `; COMPUTE_PGM_RSRC2:USER_SGPR: 16`. The key keeps
# the spaces before `=` (the caller strips them) and the value ends at its last non-space: no
# `\s*` is tried at every step of a lazy group, which made a 100,000-tab line take 20 s.
_INFO = re.compile(r"^;\s*([A-Za-z][^=]*?)(?::\s+|=\s*)(\S(?:.*\S)?)\s*$")
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
        self.blocks = BlockBuilder()
        # SGPRs that hold the scratch buffer descriptor: buffer ops through them are spills
        # (gfx90a spills with `buffer_store_dword v0, off, s[72:75], 0`). The descriptor
        # arrives in s[0:3] when the kernel descriptor says private_segment_buffer 1.
        self.scratch_rsrc: set[str] = {"s0", "s1", "s2", "s3", "s[0:3]"} if private_segment_in_sgprs else set()

    def finish(self) -> IsaFunction:
        blocks, labels = self.blocks.build([i.line for i in self.instructions])
        return IsaFunction(self.name, self.line, tuple(self.instructions), blocks, labels)


class AmdgcnParser:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.arch: str | None = None
        self.files: dict[int, str] = {}
        self.paths: dict[str, str] | None = None  # by_basename(files), kept until files change
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

    # long, complex: the per-line read loop, its hot path inlined on purpose (per-line calls were most of the cost)
    def parse(self) -> IsaProgram:
        # The hot path (an instruction line inside a function, a `.loc`) is inlined here, with
        # per-mnemonic facts and per-`.loc` tuples looked up in dicts: a kernel has ~1,500
        # instructions over ~2,000 lines, and a method call or regex per line is most of the cost.
        # Everything else goes to the methods below, which keep the parser's state on self.
        new = tuple.__new__
        findall = _ARGS.findall
        mnemonic_facts = _MNEMONIC_FACTS
        special = _BUFFER | _WAIT | _BRANCH | (_TRACK if self.private_segment_in_sgprs else 0)
        # A kernel has a `.loc` every third instruction or so: each distinct `.loc` line is read
        # once (`locs`), and its SourceLine looked up (`sources`) at the first instruction after it.
        locs: dict[str, tuple[int, int, int, str] | None] = {}
        sources: dict[str, SourceLine | None] = {}
        waits: dict[tuple, isa.Wait | None] = {}  # (mnemonic, operands, arch) -> its Wait (immutable)
        fn = append = source = loc = loc_line = None
        index = 0  # of the next instruction in `fn`
        stale = True  # the `.loc` in force changed since `source` was looked up
        in_info = False
        raws = self.text.split("\n")  # the lines as written: the YAML block keeps its indentation
        numbered = enumerate(map(str.strip, raws), 1)  # stripped by map: no method call per line here
        for lineno, line in numbered:
            if not line:
                continue
            first = line[0]
            if first > "Z":  # an instruction (or a label, or junk: _code_line sorts those out)
                in_info = False
                head, _, rest = (line.partition(";")[0].rstrip() if ";" in line else line).partition(" ")
                facts = mnemonic_facts.get(head)
                if facts is None or fn is None:
                    head, rest, facts = self._code_line(line, lineno)
                    if fn is not self.current:
                        fn = self.current
                        append, index = (fn.instructions.append, len(fn.instructions)) if fn else (None, 0)
                    if facts is None:
                        continue
                kind, memory, matrix, flags = facts
                # _ARGS splits on whitespace and commas except inside `op_sel:[0,1]`; without `:[`
                # str.split gives the same tokens at a fraction of the regex's cost.
                args = tuple(rest.replace(",", " ").split()) if ":[" not in rest else tuple(findall(rest))
                wait = None
                if flags & special:
                    if flags & _BUFFER:
                        kind, memory = self._buffer_access(fn, kind, memory, args)
                    elif flags & _WAIT:  # a kernel has a few distinct waits, each read once
                        key = (head, args, self.arch)
                        wait = waits.get(key, _MISSING)
                        if wait is _MISSING:
                            wait = waits[key] = ops.parse_wait(head, args, self.arch)
                    elif flags & _BRANCH:
                        targets = tuple(a for a in args if a.startswith(".L"))
                        if head == "s_setpc_b64" and index >= 2:
                            targets = _long_branch_target(fn.instructions[index - 2:index]) or targets
                        fn.blocks.branch(index, targets, falls_through=head.startswith("s_cbranch_"))
                    elif fn.scratch_rsrc and args:
                        self._track_scratch_rsrc(fn, head, args)
                if stale:
                    source = sources.get(loc_line, _MISSING) if loc_line is not None else _MISSING
                    if source is _MISSING:
                        self.raw_loc = loc
                        source = self._source()
                        if loc_line is not None:
                            sources[loc_line] = source
                    stale = False
                append(new(Instruction, (index, lineno, head, args, kind, memory, wait, matrix, source, None, None)))
                index += 1
            elif first == ".":
                in_info = False
                if line[:5] in (".loc\t", ".loc "):
                    new_loc = locs.get(line, _MISSING)
                    if new_loc is _MISSING:
                        new_loc = locs[line] = _loc(line)
                    if new_loc is not None and new_loc is not loc:
                        loc, loc_line = new_loc, line
                        stale = True
                    continue
                if line[-1] == ":" and fn is not None and " " not in line and "\t" not in line:
                    name = line[:-1]
                    if name.startswith(".Ltmp") and "=" not in name and name not in self.function_names:
                        fn.blocks.labels[name] = index  # a debug range mark: _label without its checks
                        continue
                    self._label(name, line, lineno)  # `.LBB0_2:`
                elif line[:5] in _INERT and ":" not in line and not self.in_descriptor:
                    continue  # `.byte`, `.cfi_*`, `.p2align`, ...: the debug sections are full of them
                else:
                    self.raw_loc = loc
                    self._dot_line(line, lineno)
                    if self.metadata_start is not None:  # the YAML block, up to .end_amdgpu_metadata
                        keep = self.metadata_lines.append
                        for lineno, line in numbered:  # noqa: B020 - the same iterator, on from here
                            if not line:
                                continue
                            if line.startswith(".end_amdgpu_metadata"):
                                self._metadata_line(raws[lineno - 1], line, lineno)
                                break
                            keep(raws[lineno - 1])
                    if self.raw_loc is not loc:  # a `.loc` the fast path did not take
                        loc, loc_line = self.raw_loc, None
                        stale = True
                if fn is not self.current:
                    fn = self.current
                    append, index = (fn.instructions.append, len(fn.instructions)) if fn else (None, 0)
            elif first == ";":
                in_info = self._comment(line, lineno, in_info)
            else:
                in_info = False
                _, _, facts = self._code_line(line, lineno)  # a label or junk: facts is None
                if fn is not self.current:
                    fn = self.current
                    append, index = (fn.instructions.append, len(fn.instructions)) if fn else (None, 0)
        self._end_function()
        if self.metadata_start is not None:  # truncated inside the YAML: keep what was read
            self.unparsed.append(Unparsed(self.metadata_start, ".amdgpu_metadata", "no .end_amdgpu_metadata", False))
        if self.functions and "metadata" not in self.facts:  # Triton's .amdgcn always has the block
            self.unparsed.append(Unparsed(self.text.count("\n") + 1, "",
                                          "truncated: the file ends before .end_amdgpu_metadata", True))
        return IsaProgram(
            isa="amdgcn", path=self.path, target=self.arch, functions=tuple(self.functions),
            files=dict(self.files), facts=dict(self.facts), unparsed=tuple(self.unparsed),
            metadata_text="\n".join(self.metadata_lines) if self.metadata_lines else None,
            metadata_line=self.metadata_line,
        )

    # ---- line kinds ---------------------------------------------------------------

    def _comment(self, line: str, lineno: int, in_info: bool) -> bool:
        """Handle a comment line; returns whether a `; Kernel info:` block is still being read."""
        fn = self.current
        if line.startswith("; %bb.") and fn is not None:  # a block LLVM did not need to label
            fn.blocks.block_start(len(fn.instructions))
            self._depth_hint(line)
        elif line.startswith("; Kernel info:"):
            return True
        elif in_info:
            m = _INFO.match(line)
            if m:
                key = m[1].strip()
                self.facts.setdefault(f"info.{key}", Fact(_number(m[2]), Origin(self.path, lineno, f"; {key}")))
        return in_info

    def _dot_line(self, line: str, lineno: int) -> None:
        head = line.split(None, 1)[0]
        if head.endswith(":"):
            self._label(head[:-1], line, lineno)
            return
        if head == ".loc":
            loc = _loc(line)
            if loc is not None:
                self.raw_loc = loc
        elif head == ".file":
            m = _FILE.match(line)
            if m:
                self.files[int(m[1])] = f"{m[2]}/{m[3]}" if m[3] is not None else m[2]
                self.paths = None
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

    def _code_line(self, line: str, lineno: int) -> tuple[str, str, tuple | None]:
        """A line that is neither a comment nor a directive, when the fast path in parse() did
        not know its first word: a label, an unknown mnemonic, an instruction outside any
        function, a tab after the mnemonic, or a mnemonic not seen before. Returns
        (mnemonic, operands, facts) for an instruction to add, facts None otherwise."""
        code, _, _comment = line.partition(";")
        head, _, rest = code.rstrip().partition(" ")
        if "\t" in head:
            head, _, more = head.partition("\t")
            rest = f"{more} {rest}"
        if head.endswith(":") and not rest.strip():
            self._label(head[:-1], line, lineno)
            return head, rest, None
        fn = self.current
        facts = _mnemonic_facts(head)
        if fn is None or facts is None:
            reason = "not an AMDGCN instruction" if fn is not None else "outside any function"
            self.unparsed.append(Unparsed(lineno, line, reason, fn is not None))
            return head, rest, None
        return head, rest, facts

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
            if self.paths is None:  # until the next `.file`
                self.paths = by_basename(self.files.values())
            paths = self.paths
            chain = [SourceLine(paths.get(name, name), ln, col) for name, ln, col in call_sites(comment)]
            source = SourceLine.from_frames([inner, *chain])
        self.sources[raw] = source
        return source


_MISSING = object()
# The first five characters of directives that _dot_line ignores (outside a kernel descriptor).
_INERT = frozenset({".byte", ".long", ".quad", ".shor", ".asci", ".uleb", ".sleb", ".valu", ".zero", ".p2al",
                    ".cfi_", ".glob", ".set\t", ".set "})
# Flags in a mnemonic's facts: what parse() must do beyond building the Instruction.
_BUFFER, _WAIT, _BRANCH, _TRACK = 1, 2, 4, 8
# mnemonic -> (kind, memory, matrix, flags) for every valid AMDGCN mnemonic seen; a kernel
# uses a few hundred, a corpus a few thousand. Cleared if something feeds it garbage.
_MNEMONIC_FACTS: dict[str, tuple] = {}


def _mnemonic_facts(mnemonic: str) -> tuple | None:
    facts = _MNEMONIC_FACTS.get(mnemonic)
    if facts is not None:
        return facts
    if not _MNEMONIC.match(mnemonic) or not mnemonic.startswith(ops.KNOWN_PREFIXES):
        return None
    kind, memory, matrix = ops.classify(mnemonic)
    flags = 0
    if memory is not None and memory.space == "buffer":
        flags = _BUFFER
    elif kind == isa.WAIT:
        flags = _WAIT
    elif kind == isa.BRANCH:
        flags = _BRANCH
    elif kind in (isa.SCALAR_ALU, isa.VECTOR_ALU, isa.SCALAR_LOAD):
        flags = _TRACK
    if len(_MNEMONIC_FACTS) > 65536:
        _MNEMONIC_FACTS.clear()
    facts = _MNEMONIC_FACTS[mnemonic] = (kind, memory, matrix, flags)
    return facts


# LLVM's branch relaxation turns a branch too far for the 16-bit offset into
#   s_getpc_b64 s[74:75] / .Lpost_getpc2: / s_add_u32 s74, s74, (.LBB0_5763-.Lpost_getpc2)&4294967295
#   s_addc_u32 s75, s75, (.LBB0_5763-.Lpost_getpc2)>>32 / s_setpc_b64 s[74:75]
# (kernels of tens of thousands of lines, e.g. a fully unrolled K loop whose back edge is one).
_LONG_BRANCH = re.compile(r"\((\.L[\w.$]+)-\.Lpost_getpc\w*\)")


def _long_branch_target(before: tuple[Instruction, ...]) -> tuple[str, ...]:
    """The label an `s_setpc_b64` jumps to, read from the two adds before it; () if not that form."""
    found = {m[1] for instr in before if instr.opcode in ("s_add_u32", "s_addc_u32")
             for arg in instr.args if (m := _LONG_BRANCH.match(arg))}
    return tuple(found) if len(found) == 1 else ()


def _loc(line: str) -> tuple[int, int, int, str] | None:
    """(file number, line, column, trailing comment) of a `.loc` directive."""
    m = _LOC.match(line)
    if m is None:
        return None
    return int(m[1]), int(m[2]), int(m[3]), line.partition(";")[2]


@collections_paused
def parse_amdgcn(text: str, path: str) -> IsaProgram:
    """Parse one `.amdgcn` file; never raises for its content (see Unparsed)."""
    return AmdgcnParser(text, path).parse()


def _number(value: str):
    try:
        return int(value, 0)
    except ValueError:
        return value


# libyaml (yaml.CSafeLoader) recurses in C per nested `[` / `{` and crashes the process
# (SIGSEGV) near 100,000 of them; Triton's amdhsa metadata nests flow collections 1 deep.
MAX_YAML_FLOW_DEPTH = 64


def _check_flow_depth(program: IsaProgram) -> None:
    text = program.metadata_text or ""
    if text.count("[") + text.count("{") <= MAX_YAML_FLOW_DEPTH:
        return
    depth = 0
    for m in re.finditer(r"[\[\]{}]", text):
        depth = depth + 1 if m[0] in "[{" else max(0, depth - 1)
        if depth > MAX_YAML_FLOW_DEPTH:
            line = (program.metadata_line or 0) + text.count("\n", 0, m.start()) + 1
            raise ArtifactError(program.path, f"amdhsa metadata nests `[` / `{{` more than {MAX_YAML_FLOW_DEPTH} deep: "
                                              "not compiler output", line)


def read_metadata(program: IsaProgram) -> dict:
    """The `amdhsa.kernels` code-object metadata as a dict (the YAML the loader reads).

    Raises ArtifactError naming the line when the YAML is broken.
    """
    if program.metadata_text is None:
        return {}
    _check_flow_depth(program)
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
        what = str(what or exc)  # a tag or token of the broken text may be any length: quote the start
        raise ArtifactError(program.path, f"amdhsa metadata is not valid YAML: {what[:160]}", line or None) from None
    return data if isinstance(data, dict) else {}
