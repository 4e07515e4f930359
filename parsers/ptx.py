"""PTX as Triton 3.0-3.9 writes it (`<kernel>.ptx`), read into the shared ISA model.

One pass over the lines with a small state machine (top level, parameter list, header,
body, data section), then the blocks. The `.file` table sits after the body, so it is
read first with one regex over the whole text; every `.loc` then resolves at once.
Source locations come in three forms:
- 3.0 and 3.2: `.loc 2 40 22` alone (a helper line in standard.py); the call site is only
  in `.debug_info` (DW_TAG_inlined_subroutine over a `$L__tmp1`..`$L__tmp2` label range),
  decoded after the pass;
- 3.3-3.8: `.loc 2 43 17  // standard.py:43:17 @[ gemm.py:31:27 ]`, the inline chain in
  the comment, outermost last;
- 3.9: `.loc 2 43 13, function_name $L__info_string0, inlined_at 1 31 17`; a deeper
  chain is the call site's own earlier `.loc ... inlined_at`.
An instruction's SourceLine is the outermost frame (the user's kernel line) with the
helper frames in `inlined`, innermost first.

Kinds and widths are in docs/isa-nvidia.md. Never raises on odd text: an unknown line in
a body is an `Unparsed(in_code=True)`; only a file with NUL bytes is an ArtifactError.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from functools import lru_cache
from itertools import compress, count, repeat

from irscope.isa.model import Instruction, IsaFunction, IsaProgram, MemoryAccess, Operand, Unparsed, Wait
from irscope.ir.llvm_ir import SourceLine
from irscope.model.kernel import Fact, Origin
from irscope.parsers.asm_source import by_basename, call_sites
from irscope.model.errors import ArtifactError
from irscope.parsers.gc_pause import collections_paused
from irscope.parsers.isa_blocks import BlockBuilder
from irscope.parsers.ptx_opcodes import PtxOp, ptx_class
from irscope.parsers.ptx_dwarf import DWARF_SECTIONS, inlined_ranges

# 	.file	1 "/tmp/irscope-fixtures/kernels/gemm.py"     (a `"dir" "name"` pair is joined)
# (no `^` anchor: a literal first word lets the regex engine skip ahead, 15x faster)
_FILE = re.compile(r'\.file[ \t]+(\d+)[ \t]+"([^"]*)"(?:[ \t]+"([^"]*)")?')
# .reqntid 128 (3.4+)   .reqntid 128, 1, 1 (3.2-3.3)   .maxntid 128, 1, 1 (3.0)   .maxnreg 128
_HEADER_DIRECTIVE = re.compile(r"\.(reqntid|maxntid|maxnreg)\s+(\d+(?:\s*,\s*\d+)*)")
# .visible .entry matmul_kernel(          .func (.param .b32 retval) helper(
_FUNC = re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$.]+)")
# .loc	2 43 13, function_name $L__info_string0, inlined_at 1 31 17 // standard.py:43:13
_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:,[^/]*?inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
# $L__BB0_2:                              // =>This Inner Loop Header: Depth=1
_LABEL = re.compile(r"([\w$.%]+):(?!:)")
_DEPTH = re.compile(r"Depth=(\d+)")
# {%r1, %r2}, [ %rd1 + 0 ], [%rd7, {%r1, %r2}], 0x10: split at top-level commas
# An unclosed `[` or `{` (a cut or broken line) runs to the end of the operands: trying every
# `[` as a start that never closes made findall quadratic (10 s for a 100,000-character line).
_ARG = re.compile(r"(?:[^,\[{]|\[[^\]]*(?:\]|$)|\{[^}]*(?:\}|$))+")
_REG = re.compile(r"%([a-z_]+?)(\d+)$")

_TOP, _PARAMS, _HEADER, _BODY, _DATA = range(5)



@collections_paused
def parse_ptx(text: str, path: str) -> IsaProgram:
    """Every function of a `.ptx` file as instructions and basic blocks, plus its directives."""
    nul = text.find("\0")
    if nul >= 0:
        raise ArtifactError(path, "contains NUL bytes (binary data?)", text.count("\n", 0, nul) + 1)
    files = {int(m[1]): f"{m[2]}/{m[3]}" if m[3] else m[2] for m in _FILE.finditer(text)}
    reader = _Reader(path, files)
    reader.read(text)
    if not reader.chained and ".debug_info" in reader.debug:
        reader.apply_dwarf_inlining()
    target = reader.facts.get("ptx_target")
    return IsaProgram(
        isa="ptx", path=path, target=target.value if target else None, functions=tuple(reader.functions),
        files=files, facts=reader.facts, unparsed=tuple(reader.unparsed),
    )


class _Scope:
    """An inline-asm `{ }` block: its labels (`waitLoop:`) are local to it."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.labels: set[str] = set()
        self.branches: list[tuple[int, tuple[str, ...], bool]] = []


class _Reader:
    def __init__(self, path: str, files: dict[int, str]) -> None:
        self.path = path
        self.files = files
        # keyed as irscope.parsers.ptx_directives: ptx_version, ptx_target, reqntid (also .maxntid), maxnreg
        self.facts: dict[str, Fact] = {}
        # `gemm.py` in a comment -> the `.file` path, where only one file has that name
        self.by_base = by_basename(files.values())
        self.functions: list[IsaFunction] = []
        self.unparsed: list[Unparsed] = []
        self.loc_cache: dict[object, SourceLine | None] = {}
        self.parents: dict[tuple[int, int, int], tuple[int, int, int]] = {}  # 3.9 inlined_at call sites
        self.chained = False  # some .loc carried its inline chain (3.3+); else DWARF gives it
        self.debug: dict[str, list[str]] = {}  # .debug_abbrev / .debug_info lines
        self.label_at: list[dict[str, int]] = []  # per function: every label -> instruction index

    # Measured (issue 24): with only the instruction line moved to a method, it read the 536 PTX files of fixtures/
    # and real_world (28 MB) 1.10x slower, best of 5 CPU seconds 1.33 vs 1.21.
    # long, complex: the read loop keeps its state in locals across lines; split, it read 1.10x slower (above)
    def read(self, text: str) -> None:
        state = _TOP
        data_depth, opened = 0, False
        debug: list[str] | None = None
        name, fline = "", 0
        # One tuple per instruction, (line, opcode, operand text, (kind, memory, wait, matrix), source, predicate):
        # operands are split and Instructions built per function, with C-level map/zip (_instructions).
        rows: list[tuple] = []
        # opcode -> (kind, memory, None, matrix) for opcodes whose facts do not depend on their operands
        plain: dict[str, tuple] = {}
        builder = BlockBuilder()
        scopes: list[_Scope] = []
        depth = 0
        source: SourceLine | None = None
        # An inline asm block is one LLVM instruction with one location, but LLVM writes a `.loc`
        # before each of its lines, the line number counting up (int8_mm.py:110, 111, 112 for a
        # 3-line `ld.global`): only the block's first `.loc` is a source line. 2: in a block,
        # no .loc seen yet; 1: in a block, seen; 0: outside.
        asm = 0
        unparsed = self.unparsed
        classify = ptx_class
        lineno = 0
        raws = text.splitlines()  # the line as written, for an Unparsed: raws[lineno - 1]
        loc_cache = self.loc_cache
        for lineno, s in enumerate(map(str.strip, raws), 1):
            if not s:
                continue
            if state == _BODY:
                c = s[0]
                if c == ".":
                    if s.startswith(".loc"):
                        if asm != 1:
                            source = loc_cache.get(s, False)  # _loc's own cache, read here: a call per .loc
                            if source is False:
                                source = self._loc(s)
                        asm = asm and 1  # inside inline asm, the first .loc is the block's own
                    elif not s.startswith((".reg", ".local", ".shared", ".param", ".pragma", ".const", ".global")):
                        unparsed.append(Unparsed(lineno, raws[lineno - 1], "unknown directive in a function body",
                                                 True))
                    continue
                if c == "/":
                    if s.startswith("// begin inline asm"):
                        asm = 2
                    elif s.startswith("// end inline asm"):
                        asm = 0
                    hint = _DEPTH.search(s) if "Depth=" in s else None
                    if hint:
                        builder.hint(len(rows), int(hint[1]))
                    continue
                if c == "{":
                    depth += 1
                    scopes.append(_Scope(lineno))
                    continue
                if c == "}":
                    depth -= 1
                    if depth > 0:
                        self._close_scope(scopes, builder)
                        continue
                    while scopes:
                        self._close_scope(scopes, builder)
                    self._finish(name, fline, rows, builder)
                    state = _TOP
                    continue
                semi = s.find(";")
                if semi < 0 or c == "$":
                    m = _LABEL.match(s)
                    if m is None:
                        unparsed.append(Unparsed(lineno, raws[lineno - 1], "not an instruction, label or directive",
                                                 True))
                        continue
                    label = m[1]
                    at = len(rows)
                    if scopes:
                        scopes[-1].labels.add(label)
                        builder.label(f"{label}@{scopes[-1].ident}", at)
                    else:
                        builder.label(label, at, label.startswith("$L__BB") or not label.startswith("$L__"))
                    hint = _DEPTH.search(s) if "Depth=" in s else None
                    if hint:
                        builder.hint(at, int(hint[1]))
                    continue
                # @%p1 st.global.b16 [ %rd1 + 0 ], { %rs1 };
                words = s[:semi].split(None, 1) or [""]  # `;` first: an empty statement, unknown below
                pred = None
                if c == "@":
                    pred = words[0][1:]
                    words = words[1].split(None, 1) if len(words) > 1 else [""]
                opcode = words[0]
                ops = words[1] if len(words) > 1 else ""
                facts = plain.get(opcode)
                if facts is None:
                    op = classify(opcode)
                    if op is None:
                        unparsed.append(Unparsed(lineno, raws[lineno - 1], f"unknown PTX instruction {opcode!r}", True))
                        continue
                    if op.width_arg is None and op.wait is None and not op.branch:
                        facts = plain[opcode] = (op.kind, op.memory, None, op.matrix)
                    else:
                        facts = self._operand_facts(op, len(rows), _split_args(ops.strip()) if ops else (),
                                                    pred, scopes, builder)
                rows.append((lineno, opcode, ops, facts, source, pred))
                continue

            if state == _DATA:
                if debug is not None:
                    debug.append(s)
                data_depth += s.count("{") - s.count("}")
                opened = opened or "{" in s
                if opened and data_depth <= 0:
                    state = _TOP
                continue
            if state == _TOP:
                if s.startswith((".version", ".target")):
                    key, detail = ("ptx_version", ".version") if s[1] == "v" else ("ptx_target", ".target")
                    value = s.split()[1] if len(s.split()) > 1 else ""
                    self.facts.setdefault(key, Fact(value.rstrip(","), Origin(self.path, lineno, detail)))
                    continue
                if s.startswith(("//", ".address_size", ".file")):
                    continue
                if s.startswith(".section") or (s.startswith((".global", ".const", ".shared", ".extern"))
                                                and ".func" not in s):
                    # `.section .debug_info` then `{` ... `}`; `.section .debug_loc { }` on one line;
                    # `.global .align 1 .b8 _$_str[11] = {95, 95, ...};`
                    data_depth = s.count("{") - s.count("}")
                    opened = "{" in s
                    if data_depth > 0 or (s.startswith(".section") and not opened):
                        state = _DATA
                        section = (s.split(None, 2) + ["", ""])[1] if s.startswith(".section") else ""
                        debug = self.debug.setdefault(section, []) if section in DWARF_SECTIONS else None
                    continue
                m = _FUNC.match(s)
                if m is None:
                    unparsed.append(Unparsed(lineno, raws[lineno - 1], "unknown top-level line", False))
                    continue
                if s.endswith(";"):  # a declaration: `.extern .func foo(...);`
                    continue
                name, fline = m[1], lineno
                rows, builder, scopes, depth, source = [], BlockBuilder(), [], 0, None
                after = s[m.end():]
                if "(" in after and ")" not in after:
                    state = _PARAMS
                elif "{" in after:
                    state, depth = _BODY, 1
                else:
                    state = _HEADER
                continue
            if state == _PARAMS:
                if s.startswith(")") or s.endswith(")"):
                    state = _HEADER
                    if "{" in s:
                        state, depth = _BODY, 1
                elif not s.startswith(".param") and not s.startswith("//"):
                    unparsed.append(Unparsed(lineno, raws[lineno - 1], "unknown line in a parameter list", False))
                continue
            # _HEADER: .reqntid 128 / .maxntid 128, 1, 1 / .maxnreg 128
            if s.startswith("{"):
                state, depth = _BODY, 1
            elif s.startswith("."):
                m = _HEADER_DIRECTIVE.match(s)
                if m:
                    dims = tuple(int(d) for d in m[2].split(","))
                    key, value = ("maxnreg", dims[0]) if m[1] == "maxnreg" else ("reqntid", dims)
                    self.facts.setdefault(key, Fact(value, Origin(self.path, lineno, f".{m[1]}")))
            elif not s.startswith("//"):
                unparsed.append(Unparsed(lineno, raws[lineno - 1], "unknown line in a function header", False))
        if state == _DATA and opened:  # 3.0-3.2 read inlined call sites from .debug_info: cut, they are lost
            unparsed.append(Unparsed(lineno, "", "truncated: the file ends inside a `.section` or data block", True))
        if state in (_PARAMS, _HEADER, _BODY):
            while scopes:
                self._close_scope(scopes, builder)
            unparsed.append(Unparsed(lineno, "", f"truncated: the file ends inside function {name!r}", True))
            self._finish(name, fline, rows, builder)

    def _finish(self, name: str, line: int, rows: list[tuple], builder: BlockBuilder) -> None:
        lines, instrs = _instructions(rows)
        blocks, labels = builder.build(lines)
        self.functions.append(IsaFunction(name, line, instrs, blocks, labels))
        self.label_at.append(dict(builder.labels))

    @staticmethod
    def _operand_facts(op: PtxOp, index: int, args: tuple[str, ...], pred: str | None, scopes: list[_Scope],
                       builder: BlockBuilder) -> tuple:
        """(kind, memory, wait, matrix) of an opcode whose operands say more: cp.async's width, a wait's
        count, a branch's targets (recorded here, in the scope of the inline-asm block it sits in)."""
        memory = op.memory
        if op.width_arg is not None:
            memory = _cp_async_access(args[op.width_arg] if len(args) > op.width_arg else "")
        wait = None
        if op.wait is not None:
            value = op.wait_value if op.wait_value is not None else _int(args[0] if args else "")
            wait = _wait(op.wait, value)
        if op.branch:
            conditional = pred is not None
            if op.branch == 3:
                targets: tuple[str, ...] = ()
            elif op.branch == 2:
                targets, conditional = (), True  # brx.idx: targets are in a .branchtargets list
            else:
                targets = args[:1]
            if scopes:
                scopes[-1].branches.append((index, targets, conditional))
            else:
                builder.branch(index, targets, conditional)
        return (op.kind, memory, wait, op.matrix)

    def apply_dwarf_inlining(self) -> None:
        """3.0-3.2: the call sites of inlined helpers are only in `.debug_info`, as label ranges."""
        ranges = inlined_ranges(self.debug.get(".debug_abbrev", []), self.debug[".debug_info"])
        for f, fn in enumerate(self.functions):
            at = self.label_at[f]
            sites: dict[int, list[tuple[int, tuple[int, int, int]]]] = {}
            for low, high, site, depth in ranges:
                if low in at and high in at:
                    for i in range(at[low], min(at[high], len(fn.instructions))):
                        sites.setdefault(i, []).append((depth, site))
            if not sites:
                continue
            instrs = list(fn.instructions)
            cache: dict[object, SourceLine] = {}
            for i, found in sites.items():
                source = instrs[i].source
                if source is None:
                    continue
                chain = tuple(site for _, site in sorted(found, reverse=True))  # deepest call site first
                new = cache.get((source, chain))
                if new is None:
                    new = cache[(source, chain)] = SourceLine.from_frames([source] + [self._frame(*c) for c in chain])
                instrs[i] = dataclasses.replace(instrs[i], source=new)
            self.functions[f] = IsaFunction(fn.name, fn.line, tuple(instrs), fn.blocks, fn.labels)

    @staticmethod
    def _close_scope(scopes: list[_Scope], builder: BlockBuilder) -> None:
        """Branches inside an inline-asm block go to its own labels; others go outward."""
        scope = scopes.pop()
        for index, targets, conditional in scope.branches:
            local = tuple(f"{t}@{scope.ident}" if t in scope.labels else t for t in targets)
            if scopes:
                scopes[-1].branches.append((index, local, conditional))
            else:
                builder.branch(index, local, conditional)

    def _loc(self, s: str) -> SourceLine | None:
        """The SourceLine a `.loc` line sets for the instructions after it; None for `.loc 1 0 0`."""
        cached = self.loc_cache.get(s, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        m = _LOC.match(s)
        if m is None or m[2] == "0":
            self.loc_cache[s] = None
            return None
        here = (int(m[1]), int(m[2]), int(m[3]))
        inner = self._frame(*here)
        if m[4] is not None:  # 3.9: the chain is in the .loc and its call sites' .locs
            site = (int(m[4]), int(m[5]), int(m[6]))
            self.parents[here] = site
            self.chained = True
            chain = [site]
            while chain[-1] in self.parents and self.parents[chain[-1]] not in chain and len(chain) < 16:
                chain.append(self.parents[chain[-1]])
            key = (here, tuple(chain))
            found = self.loc_cache.get(key)
            if found is None:
                found = self.loc_cache[key] = SourceLine.from_frames([inner] + [self._frame(*f) for f in chain])
            return found  # not cached by text: the same text can sit under another call site
        source = inner
        comment = s.find("//", m.end())
        if comment >= 0 and "@[" in s:  # 3.3-3.8: `// standard.py:43:17 @[ gemm.py:31:27 ]`
            self.chained = True
            sites = [SourceLine(self.by_base.get(f, f), ln, col) for f, ln, col in call_sites(s[comment:])]
            source = SourceLine.from_frames([inner, *sites])
        self.loc_cache[s] = source
        return source

    def _frame(self, fno: int, line: int, col: int) -> SourceLine:
        return SourceLine(self.files.get(fno, f"<file {fno}>"), line, col)


def _split_args(ops: str) -> tuple[str, ...]:
    if "[" not in ops and "{" not in ops:  # then no operand has a space inside
        return tuple(ops.replace(" ", "").replace("\t", "").split(","))
    # a piece that is only whitespace strips to "" and is dropped, as `not a.isspace()` did
    return tuple(filter(None, map(str.strip, _ARG.findall(ops))))




def _instructions(rows: list[tuple]) -> tuple[list[int], tuple[Instruction, ...]]:
    """The lines and Instructions of a function's rows (see `read`), their operands split as
    _split_args does, built with map/zip over columns: no Python-level call per instruction
    but for operands with `[` or `{`."""
    if not rows:
        return [], ()
    lines, opcodes, operands, facts, sources, preds = zip(*rows)
    stripped = list(map(str.strip, operands))
    # Operand lists without brackets or braces: their spaces and tabs dropped, split at commas, all at once
    # (operand text has no newline: it is part of one line).
    cleaned = "\n".join(stripped).replace(" ", "").replace("\t", "").split("\n")
    args = list(map(tuple, map(str.split, cleaned, repeat(","))))
    # `in` through map, not a regex search per operand list: a call per instruction less
    bracketed = map(operator.or_, map(operator.contains, stripped, repeat("[")),
                    map(operator.contains, stripped, repeat("{")))
    for i in compress(range(len(stripped)), bracketed):
        args[i] = _split_args(stripped[i])
    for i in compress(range(len(operands)), map(operator.not_, operands)):
        args[i] = ()
    kinds, memories, waits, matrices = zip(*facts)
    columns = zip(count(), lines, opcodes, args, kinds, memories, waits, matrices, sources, preds, repeat(None))
    return list(lines), tuple(map(tuple.__new__, repeat(Instruction), columns))


def _int(token: str) -> int:
    try:
        return int(token, 0)
    except ValueError:
        return -1  # a register operand: the count is not known statically


@lru_cache(maxsize=None)
def _wait(counter: str, value: int) -> Wait:
    return Wait(((counter, value),))


@lru_cache(maxsize=None)
def _cp_async_access(size: str) -> MemoryAccess:
    """cp.async's cp-size operand (`0x10`, `16`) is the bytes each thread copies."""
    width = _int(size)
    return MemoryAccess("global", width if width > 0 else None)



_SPECIAL = frozenset("""
    tid ntid laneid warpid nwarpid ctaid nctaid smid nsmid gridid clock clock64 clock_hi globaltimer
    globaltimer_lo globaltimer_hi total_smem_size aggr_smem_size dynamic_smem_size is_explicit_cluster
    cluster_ctarank cluster_nctarank clusterid nclusterid cluster_ctaid cluster_nctaid current_graph_exec
""".split())


@lru_cache(maxsize=4096)
def ptx_operand(token: str) -> Operand:
    """`%r12` -> reg "%r" 12; `%tid.x` special; `0x10` literal; `$L__BB0_2` label; `[ %rd1 + 0 ]` address.

    A vector `{%r1, %r2}` is kind "other" named "vector" (ptx_registers lists its registers);
    a bare symbol (a label, `matmul_kernel_param_0`, a named inline-asm register) is "label".
    """
    t = token.strip()
    if not t:
        return Operand("other", token)
    c = t[0]
    if c == "%":
        name = t[1:]
        if not name[:1].isalpha():
            return Operand("other", token)
        if "." in name or name in _SPECIAL or name.startswith(("lanemask_", "envreg", "pm", "reserved_smem")):
            return Operand("special", token)
        m = _REG.match(t)
        if m:
            return Operand("reg", token, first=int(m[2]), name="%" + m[1])
        return Operand("reg", token, name=t)
    if c == "[":
        return Operand("address", token)
    if c == "{":
        return Operand("other", token, name="vector")
    if c.isdigit() or (c in "+-" and len(t) > 1 and t[1].isdigit()):
        return Operand("literal", token)
    if t == "_":
        return Operand("special", token)  # the sink operand of mbarrier.arrive
    if c == "$" or c.isalpha() or c == "_":
        if "|" in t:
            return Operand("other", token)  # elect.sync %r1|%p1
        return Operand("label", token)
    return Operand("other", token)


_REGS_IN = re.compile(r"%[a-z_]+\d+\b(?!\.)")


def ptx_registers(token: str) -> tuple[str, ...]:
    """Numbered registers inside any operand: `{%r1, %r2}` -> ("%r1", "%r2"), `[%rd3+8]` -> ("%rd3",)."""
    return tuple(_REGS_IN.findall(token))
