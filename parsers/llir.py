"""A light, fast read of Triton's LLVM IR (`.llir`): functions, calls, memory accesses, `!dbg`.

Not an LLVM parser: compiled regexes run over each function body (never a Python loop
over every line) and pick out only the lines that matter - `define`, `call`, `load`,
`store`, `atomicrmw`, `cmpxchg` - plus the attribute groups, `!nvvm.annotations` and the
debug-info nodes at the end of the file. Anything else is skipped. A file cut short
keeps what was read and records a Problem instead of failing.

Forms seen in Triton 3.0-3.9: AMD kernels are `define amdgpu_kernel` with
`"amdgpu-flat-work-group-size"="1,256"` in their `#0` group; NVIDIA kernels are
`define ptx_kernel` with `"nvvm.reqntid"="128"` (3.6+) or `define void` plus
`!nvvm.annotations` (`!"kernel"`, `!"maxntidx"` in 3.0, `!"reqntidx"` in 3.2). NVIDIA
global loads/stores, `mma.sync`, `wgmma` and `cp.async` are inline PTX asm.
"""

from __future__ import annotations

import re
from functools import lru_cache

from irscope.parsers.lines import LineIndex

from irscope.ir.llvm_ir import (
    IntrinsicCall,
    LlvmFunction,
    LlvmModule,
    MemoryOp,
    SourceLine,
)
from irscope.model.kernel import Problem

# define amdgpu_kernel void @add_kernel(ptr addrspace(1) nocapture readonly %0, ...) local_unnamed_addr #0 !dbg !4 {
_DEFINE_LINE = re.compile(r"\n(?P<define>define\b[^\n]*)")
_DEFINE = re.compile(r'define\b(?P<head>[^@\n]*)@(?P<name>[-\w.$]+|"[^"\n]*")\((?P<tail>[^\n]*)')
# ... local_unnamed_addr #0 !dbg !4 {      (the attribute group after the parameter list)
_GROUP_REF = re.compile(r"#(\d+)")
# define amdgpu_kernel void @add_kernel(    define ptx_kernel void @add_kernel(    define void @add_kernel(
_CALLING_CONV = re.compile(r"\b(?:amdgpu_\w+|ptx_\w+|spir_\w+|fastcc|coldcc|tailcc|ccc|cc\d+)\b")
_KERNEL_CONVS = frozenset({"amdgpu_kernel", "ptx_kernel", "spir_kernel"})

# The instructions read from a body, one match per line:
#   %18 = load float, ptr %17, align 16, !dbg !12
#   store <4 x half> %1043, ptr addrspace(3) %1042, align 8, !dbg !40
#   %123 = atomicrmw fadd ptr addrspace(1) %121, float %122 syncscope("agent") monotonic, align 4, !dbg !43
#   %5 = tail call i32 @llvm.amdgcn.workgroup.id.x(), !dbg !7
_INSTRUCTION = re.compile(
    r"\n[ \t]+(?:%[-\w.$]+[ \t]*=[ \t]*)?"
    r"(?:(?P<mem>load|store|atomicrmw|cmpxchg)|(?:(?:tail|musttail|notail)[ \t]+)?call)\b(?P<rest>[^\n]*)")

# An IR type as it appears before an operand: float, <4 x half>, { i32, i32 }, [4 x i8], ptr addrspace(3)
_TYPE = r"\{[^}\n]*\}|<[^>\n]*>|\[[^\n]*?\](?=[ ,])|[\w.]+(?:[ \t]+addrspace\(\d+\))?"
_PTR = r"ptr(?:[ \t]+addrspace\((?P<space>\d+)\))?"
#  float, ptr %17, align 16, !dbg !12               (after `load`)
_LOAD_OPERANDS = re.compile(rf"[ \t]+(?:atomic[ \t]+)?(?:volatile[ \t]+)?(?P<type>{_TYPE}),[ \t]*{_PTR}[ \t]")
#  <4 x half> %1043, ptr addrspace(3) %1042, align 8, !dbg !40    (after `store`)
_STORE_OPERANDS = re.compile(
    rf"[ \t]+(?:atomic[ \t]+)?(?:volatile[ \t]+)?(?P<type>{_TYPE})[ \t][^\n]*?,[ \t]*{_PTR}[ \t]")
#  fadd ptr addrspace(1) %121, float %122 syncscope("agent") monotonic, align 4   (after `atomicrmw`;
#  `cmpxchg` has no operation word: `cmpxchg ptr %p, i32 %old, i32 %new acq_rel monotonic`)
_ATOMIC_OPERANDS = re.compile(
    rf"[ \t]+(?:weak[ \t]+)?(?:volatile[ \t]+)?(?:(?P<op>[a-z_]+)[ \t]+)?"
    rf"{_PTR}[ \t]+[^,\n]+,[ \t]*(?P<type>{_TYPE})[ \t]")
# , align 16
_ALIGN = re.compile(r",[ \t]*align[ \t]+(?P<n>\d+)")
#  i32 @llvm.amdgcn.workgroup.id.x(), !dbg !7          (after `call`)
#  { i32, i32, i32, i32 } asm sideeffect "mov.u32 $0, 0x0;\0A\09...ld.global.v4.b32 { $0, $1, $2, $3 }, [ $4 + 0 ];", "=r,..."(...)  # noqa: E501
_CALLEE = re.compile(r'(?P<ret>[^@"\n]*?)(?:@(?P<name>[-\w.$]+)\((?P<args>[^\n]*)|\basm\b[^"\n]*"(?P<asm>[^"\n]*)")')
# <8 x half>    (the last type before the callee: `tail call noundef <8 x half> @llvm...`)
_RETURN_TYPE = re.compile(rf"(?:{_TYPE})[ \t]*$")

# target triple = "amdgcn-amd-amdhsa"
_TRIPLE = re.compile(r'\ntarget triple = "(?P<triple>[^"\n]*)"')
# target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-..."    (pointer widths per address space)
_POINTER_LAYOUT = re.compile(r"(?:^|-)p(?P<space>\d*):(?P<bits>\d+)")
_DATALAYOUT = re.compile(r'\ntarget datalayout = "(?P<layout>[^"\n]*)"')
# attributes #0 = { mustprogress nofree ... "amdgpu-flat-work-group-size"="1,256" "amdgpu-waves-per-eu"="1" }
_ATTRIBUTE_GROUP = re.compile(r"\nattributes #(?P<id>\d+) = \{(?P<body>[^\n]*)\}")
# "amdgpu-flat-work-group-size"="1,256"     "amdgpu-no-agpr"
_STRING_ATTRIBUTE = re.compile(r'"(?P<key>[^"]*)"(?:="(?P<value>[^"]*)")?')
# !5 = !{ptr @add_kernel, !"maxntidx", i32 128}
_NVVM_ANNOTATION = re.compile(r'\n!\d+ = !\{[^@\n]*@(?P<fn>[-\w.$]+), !"(?P<key>[^"]+)", i32 (?P<value>-?\d+)\}')
# !7 = !DILocation(line: 13, column: 24, scope: !4)
# !9 = distinct !DILexicalBlockFile(scope: !4, file: !10, discriminator: 0)
_DEBUG_NODE = re.compile(
    r"\n!(?P<id>\d+) = (?:distinct )?!(?P<kind>DILocation|DIFile|DISubprogram|DILexicalBlockFile|DILexicalBlock)"
    r"\((?P<fields>[^\n]*)\)(?=\n|$)")
# line: 13    scope: !4    filename: "vector_add.py"
# \b: a key starts a word; without it every position of a 20,000-letter word retried `\w+: ` (2 s).
_DEBUG_FIELD = re.compile(r'\b(?P<key>\w+): (?:!(?P<ref>\d+)|"(?P<text>(?:[^"\\]|\\.)*)"|(?P<int>-?\d+))')
# ... !dbg !12      (the instruction's debug location, at the end of its line)
_DBG_REF = re.compile(r"!dbg !(?P<id>\d+)")
_DIGITS = re.compile(r"\d+")

# Address space names; they differ where AMD and NVIDIA differ (5 is AMD private, NVIDIA local).
_SPACES = {0: "generic", 1: "global", 3: "shared", 4: "constant"}
_BACKEND_SPACES = {
    "hip": {5: "private", 7: "buffer_fat_pointer", 8: "buffer", 9: "buffer_strided_pointer"},
    "cuda": {5: "local", 7: "shared_cluster"},
}
# PTX state spaces in inline asm (`ld.global`, `st.shared::cta`) as LLVM address spaces.
_PTX_SPACES = {"global": 1, "shared": 3, "shared::cta": 3, "shared::cluster": 7, "local": 5, "const": 4}
_PTX_ATOMIC_OPS = frozenset({"add", "inc", "dec", "min", "max", "and", "or", "xor", "exch", "cas"})

# Calls that are memory accesses: name prefix -> (kind, where the value is: return, first argument,
# or the arguments after the pointer). Checked in order: `.lds` buffer loads are async copies.
_MEMORY_INTRINSICS = (
    ("llvm.amdgcn.raw.ptr.buffer.load.lds", None, None),
    ("llvm.amdgcn.struct.ptr.buffer.load.lds", None, None),
    ("llvm.masked.load.", "load", "return"),
    ("llvm.masked.store.", "store", "first"),
    ("llvm.amdgcn.raw.ptr.buffer.load", "load", "return"),
    ("llvm.amdgcn.struct.ptr.buffer.load", "load", "return"),
    ("llvm.amdgcn.raw.ptr.buffer.store", "store", "first"),
    ("llvm.amdgcn.struct.ptr.buffer.store", "store", "first"),
    ("llvm.amdgcn.raw.ptr.buffer.atomic.", "atomicrmw", "return"),
    ("llvm.amdgcn.ds.read.tr", "load", "return"),
    ("llvm.amdgcn.ds.load.tr", "load", "return"),
    ("llvm.nvvm.ldmatrix.", "load", "return"),
    ("llvm.nvvm.stmatrix.", "store", "after_pointer"),
)

# Intrinsic name (without `llvm.`) -> family; first match wins.
_BUFFER = r"amdgcn\.(?:raw|struct)(?:\.ptr)?\.buffer\."
_CROSS_LANE = r"amdgcn\.(?:update\.dpp|mov\.dpp|ds\.swizzle|ds\.b?permute|readlane|readfirstlane|writelane|permlane)"
_MATH = (r"(?:amdgcn\.|nvvm\.)?(?:exp2?|ex2|log2?|lg2|sqrt|rsqrt|rsq|rcp|div|fma|fabs|maxnum|minnum|maximum"
         r"|minimum|[su]?max|[su]?min|sin|cos|floor|ceil|trunc|round|vector\.reduce)\b")
_INTRINSIC_FAMILIES = tuple((re.compile(p), f) for p, f in (
    (r"amdgcn\.s?mfma", "mfma"), (r"amdgcn\.s?wmma|amdgcn\.swmmac|nvvm\.wmma", "wmma"),
    (r"nvvm\.mma\.", "mma"), (r"nvvm\.wgmma\.mma_async", "wgmma"), (r"nvvm\.wgmma\.", "wgmma_sync"),
    (r"nvvm\.ldmatrix", "ldmatrix"), (r"nvvm\.stmatrix", "stmatrix"),
    (r"amdgcn\.(?:ds|global)\.(?:read|load)\.tr", "transpose_load"),
    # gfx12 splits a barrier into s.barrier.signal + s.barrier.wait: the signal is the barrier.
    (r"amdgcn\.s\.barrier\.wait", "barrier_wait"),
    (r"amdgcn\.s\.barrier|nvvm\.barrier|nvvm\.bar\.", "barrier"),
    (r"amdgcn\.s\.wait", "waitcnt"),
    (r"amdgcn\.(?:sched\.|s\.setprio|iglp\.)", "sched"),
    (r"nvvm\.cp\.async\.bulk\.tensor", "tma"),
    (r"nvvm\.cp\.async\.(?:bulk\.)?(?:commit|wait)|amdgcn\.(?:wait\.)?asyncmark", "async_wait"),
    (rf"nvvm\.cp\.async|amdgcn\.global\.load\.(?:async\.)?lds|{_BUFFER}load\.lds", "async_copy"),
    (r"nvvm\.mbarrier", "mbarrier"), (r"nvvm\.fence", "fence"),
    (rf"{_CROSS_LANE}|nvvm\.shfl", "shuffle"),
    (rf"masked\.load|{_BUFFER}load", "load"), (rf"masked\.store|{_BUFFER}store", "store"),
    (rf"{_BUFFER}atomic", "atomic"),
    (r"amdgcn\.work(?:item|group)\.id|nvvm\.read\.ptx\.sreg", "id"),
    (_MATH, "math"),
))
# PTX mnemonic in inline asm -> family; first match wins.
_PTX_FAMILIES = tuple((re.compile(p), f) for p, f in (
    (r"mma\.sync", "mma"), (r"wgmma\.mma_async", "wgmma"), (r"wgmma\.", "wgmma_sync"),
    (r"ldmatrix", "ldmatrix"), (r"stmatrix", "stmatrix"),
    (r"bar\.|barrier\.", "barrier"),
    (r"cp\.async\.bulk\.tensor", "tma"), (r"cp\.async\.(?:bulk\.)?(?:commit|wait)", "async_wait"),
    (r"cp\.async", "async_copy"), (r"mbarrier\.", "mbarrier"), (r"tensormap\.", "tensormap"),
    (r"fence\.", "fence"), (r"shfl\.", "shuffle"),
    (r"ld\.", "load"), (r"st\.", "store"), (r"atom\.|red\.", "atomic"),
    (r"(?:ex2|lg2|sqrt|rsqrt|rcp|div|fma|max|min|sin|cos)\.", "math"),
))
_SKIPPED_ASM = re.compile(r"^(?:\{|\}|//|\.reg\b|[\w$]+:$)")
# mov.u32 $0, %ctaid.x;      (3.0 reads the block id through asm, not an intrinsic)
_SPECIAL_REGISTER = re.compile(r"%(?:ctaid|tid|nctaid|ntid|laneid|warpid|clusterid|nclusterid|smid)\b")


def parse_llir(text: str, path: str) -> LlvmModule:
    """Read one `.llir`. Never raises for malformed text: what cannot be read is a Problem."""
    # Every pattern starts with the newline before its line: `^` in MULTILINE mode makes
    # the regex engine try every character, a literal `\n` lets it skip ahead (3-10x faster).
    # With one newline put in front, a match at offset i is on line line_of(i) of the file.
    text = "\n" + text
    lines = LineIndex(text)
    problems: list[Problem] = []
    meta_start = text.find("\n!")  # debug info and annotations sit after the functions
    meta_start = len(text) if meta_start < 0 else meta_start
    debug = _DebugInfo(text, meta_start)
    groups = _attribute_groups(text, lines)
    annotations = _nvvm_annotations(text, lines, meta_start)
    triple = _TRIPLE.search(text)
    backend = _backend(text, triple["triple"] if triple else None)
    reader = _BodyReader(text, path, lines, debug, backend, _pointer_bits(text), problems)

    functions = []
    for m in _DEFINE_LINE.finditer(text):
        line = lines.line_of(m.start())
        define = _DEFINE.match(m["define"])
        if define is None or not define["tail"].rstrip().endswith("{"):
            problems.append(Problem(path, "a `define` line is cut off before the function body", line))
            continue
        name = define["name"].strip('"')
        body_end = text.find("\n}", m.end())
        next_define = text.find("\ndefine", m.end())
        if body_end < 0 or 0 <= next_define < body_end:
            body_end = next_define if next_define >= 0 else _last_whole_line(text)
            end_line = None
            problems.append(Problem(path, f"@{name} has no closing '}}': the file ends inside it (truncated?)", line))
        else:
            end_line = lines.line_of(body_end)
        calls, memory_ops = reader.read(m.end(), body_end)
        attributes, attribute_lines = _attributes(define["tail"], groups, annotations.get(name, {}),
                                                  name, path, line, problems)
        conv = _CALLING_CONV.search(define["head"])
        dbg = _DBG_REF.search(define["tail"])
        functions.append(LlvmFunction(
            name=name, line=line, end_line=end_line,
            calling_conv=conv.group() if conv else None,
            is_kernel=(conv is not None and conv.group() in _KERNEL_CONVS) or attributes.get("nvvm.kernel") == "1",
            attributes=attributes, attribute_lines=attribute_lines,
            calls=tuple(calls), memory_ops=tuple(memory_ops),
            debug=debug.subprogram(int(dbg["id"])) if dbg else None,
        ))
    if not functions and not problems:
        problems.append(Problem(path, "no function definitions (`define`) in the file", None, "warning"))
    reader.report()
    if debug.missing:
        message = (f"{len(debug.missing)} `!dbg` reference(s) do not lead to a DILocation in the file "
                   f"(first: !{min(debug.missing)}; truncated?); their source lines are unknown")
        problems.append(Problem(path, message, None, "warning"))
    return LlvmModule(path, backend, triple["triple"] if triple else None, tuple(functions), tuple(problems))


def _attributes(tail: str, groups: dict, annotations: dict, name: str, path: str, line: int,
                problems: list[Problem]) -> tuple[dict[str, str], dict[str, int]]:
    """The string attributes of the function's `#N` groups, then its nvvm annotations."""
    attributes: dict[str, str] = {}
    attribute_lines: dict[str, int] = {}
    for group in _GROUP_REF.findall(tail[tail.rfind(")"):]):  # after the parameter list
        if int(group) not in groups:
            problems.append(Problem(path, f"@{name} uses attribute group #{group}, which the file does not define",
                                    line, "warning"))
            continue
        group_attributes, group_line = groups[int(group)]
        for key, value in group_attributes.items():
            attributes.setdefault(key, value)
            attribute_lines.setdefault(key, group_line)
    for key, (value, annotation_line) in annotations.items():
        attributes.setdefault(key, value)
        attribute_lines.setdefault(key, annotation_line)
    return attributes, attribute_lines


class _BodyReader:
    """Reads the calls and memory accesses of function bodies, one regex pass per body."""

    def __init__(self, text, path, lines, debug, backend, pointer_bits, problems) -> None:
        self.text, self.path, self.lines, self.debug = text, path, lines, debug
        self.backend, self.pointer_bits, self.problems = backend, pointer_bits, problems
        self.spaces = {**_SPACES, **_BACKEND_SPACES.get(backend or "", {})}
        self.unread: list[int] = []  # lines that looked like a memory access but did not parse

    def read(self, start: int, end: int) -> tuple[list[IntrinsicCall], list[MemoryOp]]:
        calls: list[IntrinsicCall] = []
        memory: list[MemoryOp] = []
        for m in _INSTRUCTION.finditer(self.text, start, end):
            rest = m["rest"]
            line = self.lines.line_of(m.start())
            dbg_at = rest.rfind("!dbg !")
            ref = _DIGITS.match(rest, dbg_at + 6) if dbg_at >= 0 else None
            where = self.debug.location(int(ref.group())) if ref else None
            if m["mem"]:
                op = self._instruction(m["mem"], rest, line, where)
                if op is None:
                    self.unread.append(line)
                else:
                    memory.append(op)
                continue
            callee = _CALLEE.match(rest)
            if callee is None:
                continue  # an indirect call: nothing to name
            if callee["asm"] is not None:
                statements = _asm_statements(callee["asm"])
                name = _primary_mnemonic(statements)
                family = _ptx_family(name)
                if family == "other" and _SPECIAL_REGISTER.search(callee["asm"]):
                    family = "id"
                calls.append(IntrinsicCall(name, "inline_asm", family, line, where))
                memory.extend(self._asm_memory(s, line, where) for s in statements if _is_ptx_memory(s))
                continue
            name = callee["name"]
            intrinsic = name.startswith("llvm.")
            calls.append(IntrinsicCall(name, "intrinsic" if intrinsic else "function",
                                       _intrinsic_family(name) if intrinsic else "other", line, where))
            if intrinsic:
                op = self._intrinsic_memory(name, callee, line, where)
                if op is not None:
                    memory.append(op)
        return calls, memory

    def report(self) -> None:
        if self.unread:
            self.problems.append(Problem(
                self.path, f"{len(self.unread)} load/store line(s) not understood and skipped "
                           f"(first at line {self.unread[0]})", self.unread[0], "warning"))

    def _op(self, kind, space, value_type, line, where, via=None, operation=None, alignment=None,
            bits=None) -> MemoryOp:
        if bits is None:
            bits = _type_bits(value_type, self.pointer_bits)
        return MemoryOp(kind, space, self.spaces.get(space, f"addrspace{space}"), value_type,
                        bits, alignment, line, where, via, operation)

    def _instruction(self, kind: str, rest: str, line: int, where) -> MemoryOp | None:
        pattern = {"load": _LOAD_OPERANDS, "store": _STORE_OPERANDS}.get(kind, _ATOMIC_OPERANDS)
        m = pattern.match(rest)
        if m is None:
            return None
        align = _ALIGN.search(rest)
        return self._op(kind, int(m["space"] or 0), m["type"], line, where,
                        operation=m["op"] if kind == "atomicrmw" else None,
                        alignment=int(align["n"]) if align else None)

    def _intrinsic_memory(self, name: str, callee: re.Match, line: int, where) -> MemoryOp | None:
        for prefix, kind, value_at in _MEMORY_INTRINSICS:  # noqa: B007 (used after the break)
            if name.startswith(prefix):
                break
        else:
            return None
        if kind is None:
            return None
        args = _split_args(callee["args"])
        pointer = next((i for i, a in enumerate(args) if a.startswith("ptr")), None)
        if pointer is None:
            return None
        space = re.match(_PTR, args[pointer])
        if value_at == "return":
            ret = _RETURN_TYPE.search(callee["ret"])
            value_type = ret.group().strip() if ret else "?"
        elif value_at == "first":
            value_type = _operand_type(args[0])
        else:  # stmatrix: the registers after the pointer
            types = [_operand_type(a) for a in args[pointer + 1:]]
            value_type = "{ " + ", ".join(types) + " }"
        alignment = None
        if name.startswith("llvm.masked.") and pointer + 1 < len(args):
            align = args[pointer + 1].rsplit(" ", 1)[-1]  # `i32 16`
            alignment = int(align) if align.isdigit() else None
        return self._op(kind, int(space["space"] or 0), value_type, line, where, via=name, alignment=alignment)

    def _asm_memory(self, statement: str, line: int, where) -> MemoryOp:
        mnemonic = statement.split(None, 1)[0]
        parts = mnemonic.split(".")
        space = next((_PTX_SPACES[p] for p in parts[1:] if p in _PTX_SPACES), 0)
        vector = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d+", p)), 1)
        scalar = next((p for p in reversed(parts) if re.fullmatch(r"[bfsu]\d+(?:x\d+)?", p)), None)
        value_type = "." + ".".join(([f"v{vector}"] if vector > 1 else []) + ([scalar] if scalar else []))
        kind, operation = {"ld": ("load", None), "st": ("store", None)}.get(parts[0], ("atomicrmw", None))
        if kind == "atomicrmw":
            operation = next((p for p in parts[1:] if p in _PTX_ATOMIC_OPS), None)
            kind = "cmpxchg" if operation == "cas" else kind
        bits = vector * _ptx_scalar_bits(scalar) if scalar else None
        return self._op(kind, space, value_type, line, where, via=mnemonic, operation=operation, bits=bits)


def debug_info(text: str) -> "_DebugInfo":
    """The debug metadata of an LLVM IR text, for resolving `!dbg !N` to source lines."""
    text = "\n" + text
    start = text.find("\n!")
    return _DebugInfo(text, len(text) if start < 0 else start)


class _DebugInfo:
    """`!dbg !N` -> SourceLine, following DILocation scopes to their DIFile, resolved on demand."""

    def __init__(self, text: str, start: int) -> None:
        self.nodes = {int(m["id"]): (m["kind"], m["fields"]) for m in _DEBUG_NODE.finditer(text, start)}
        self.fields: dict[int, dict[str, str | int]] = {}
        self.cache: dict[int, SourceLine | None] = {}
        self.missing: set[int] = set()  # `!dbg` targets that are not in the file (or not a location)

    def location(self, ref: int | None) -> SourceLine | None:
        if ref is None:
            return None
        if ref not in self.cache:
            frames, seen = [], set()
            cur: int | None = ref
            while cur is not None and cur not in seen:  # a DILocation, then its inlinedAt chain outwards
                seen.add(cur)
                node = self._node(cur, "DILocation")
                if node is None:
                    self.missing.add(cur)
                    break
                frames.append(SourceLine(self._file(node.get("scope")), _number(node, "line"), _number(node, "column")))
                cur = _number(node, "inlinedAt") or None
            self.cache[ref] = SourceLine.from_frames(frames) if frames else None
        return self.cache[ref]

    def subprogram(self, ref: int) -> SourceLine | None:
        node = self._node(ref, "DISubprogram")
        if node is None:
            self.missing.add(ref)
            return None
        return SourceLine(self._file(ref), _number(node, "line"), 0)

    def _node(self, ref, kind: str | None = None) -> dict | None:
        """The node's fields: `!N` refs and numbers as ints, strings as str; None if absent or another kind."""
        if ref not in self.nodes or (kind is not None and self.nodes[ref][0] != kind):
            return None
        if ref not in self.fields:
            self.fields[ref] = {m["key"]: int(m["ref"] or m["int"]) if m["text"] is None else m["text"]
                                for m in _DEBUG_FIELD.finditer(self.nodes[ref][1])}
        return self.fields[ref]

    def _file(self, scope) -> str:
        seen = set()
        while scope not in seen and (node := self._node(scope)) is not None:
            seen.add(scope)
            if self.nodes[scope][0] == "DIFile":
                name, directory = str(node.get("filename", "")), str(node.get("directory", ""))
                return name if name.startswith("/") or not directory else f"{directory.rstrip('/')}/{name}"
            scope = node.get("file", node.get("scope"))  # a DISubprogram or lexical block names its file
        return "?"


def _number(node: dict, key: str) -> int:
    value = node.get(key, 0)
    return value if isinstance(value, int) else 0  # a quoted value where a number belongs


def _attribute_groups(text: str, lines: LineIndex) -> dict[int, tuple[dict[str, str], int]]:
    start = max(text.find("\nattributes #"), 0)  # the groups follow the functions
    return {int(m["id"]): ({a["key"]: a["value"] or "" for a in _STRING_ATTRIBUTE.finditer(m["body"])},
                           lines.line_of(m.start()))
            for m in _ATTRIBUTE_GROUP.finditer(text, start)}


def _nvvm_annotations(text: str, lines: LineIndex, start: int) -> dict[str, dict[str, tuple[str, int]]]:
    found: dict[str, dict[str, tuple[str, int]]] = {}
    for m in _NVVM_ANNOTATION.finditer(text, start):
        found.setdefault(m["fn"], {}).setdefault(f"nvvm.{m['key']}", (m["value"], lines.line_of(m.start())))
    return found


def _backend(text: str, triple: str | None) -> str | None:
    if triple:
        return "hip" if triple.startswith(("amdgcn", "amdgpu")) else "cuda" if triple.startswith("nvptx") else None
    if "amdgpu_kernel" in text or "@llvm.amdgcn." in text:
        return "hip"
    if "ptx_kernel" in text or "!nvvm.annotations" in text or "@llvm.nvvm." in text:
        return "cuda"
    return None


def _pointer_bits(text: str) -> dict[int, int]:
    layout = _DATALAYOUT.search(text)
    bits = {int(m["space"] or 0): int(m["bits"]) for m in _POINTER_LAYOUT.finditer(layout["layout"])} if layout else {}
    bits.setdefault(0, 64)
    return bits


def _type_bits(value_type: str, pointer_bits: dict[int, int]) -> int | None:
    # _type_bits_cached recurses per nesting level: a type of 2,000 `[1 x ` (a broken file) overflowed
    # Python's stack. LLVM IR's types of Triton nest two or three deep; such a type's width is unknown.
    if sum(value_type.count(c) for c in "[<{") > 64:
        return None
    return _type_bits_cached(value_type, tuple(sorted(pointer_bits.items())))


@lru_cache(maxsize=4096)
def _type_bits_cached(t: str, pointer_bits: tuple[tuple[int, int], ...]) -> int | None:
    t = t.strip()
    if t[:1] in "<[" and (m := re.fullmatch(r"[<\[](\d+) x (.+)[>\]]", t)):
        inner = _type_bits_cached(m[2], pointer_bits)
        return None if inner is None else int(m[1]) * inner
    if t.startswith("{") and t.endswith("}"):
        parts = [_type_bits_cached(p, pointer_bits) for p in _split_args(t[1:-1] + ")")]
        return None if not parts or None in parts else sum(parts)
    if m := re.fullmatch(r"i(\d+)", t):
        return int(m[1])
    if m := re.fullmatch(r"ptr(?:\s+addrspace\((\d+)\))?", t):
        table = dict(pointer_bits)
        return table.get(int(m[1] or 0), table[0])
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64, "fp128": 128, "x86_fp80": 80}.get(t)


def _split_args(args: str) -> list[str]:
    """`a, <2 x i32> <i32 1, i32 2>, b) #2, !dbg !4` -> ['a', '<2 x i32> <i32 1, i32 2>', 'b']."""
    out, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(args):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
    else:
        i = len(args)
    last = args[start:i].strip()
    return out + [last] if last else out


def _operand_type(operand: str) -> str:
    m = re.match(_TYPE, operand)
    return m.group() if m else "?"


def _asm_statements(asm: str) -> list[str]:
    # LLVM writes newline and tab inside the asm string as \0A and \09.
    pieces = re.split(r";|\\0A", asm.replace("\\09", " "))
    out = []
    for piece in pieces:
        s = re.sub(r"^@!?[$%]?\w+\s+", "", piece.strip())  # drop a predicate guard: @$5 ld.global...
        if s and not _SKIPPED_ASM.match(s):
            out.append(s)
    return out


def _primary_mnemonic(statements: list[str]) -> str:
    """The first mnemonic that is not a `mov` (Triton zeroes asm outputs with movs first)."""
    for s in statements:
        if not s.startswith("mov."):
            return s.split(None, 1)[0]
    return statements[0].split(None, 1)[0] if statements else "?"


def _is_ptx_memory(statement: str) -> bool:
    return statement.startswith(("ld.", "st.", "atom.", "red.")) and not statement.startswith("ld.param")


@lru_cache(maxsize=1024)
def _intrinsic_family(name: str) -> str:
    short = name[5:]
    return next((family for pattern, family in _INTRINSIC_FAMILIES if pattern.match(short)), "other")


@lru_cache(maxsize=1024)
def _ptx_family(mnemonic: str) -> str:
    return next((family for pattern, family in _PTX_FAMILIES if pattern.match(mnemonic)), "other")


def _ptx_scalar_bits(scalar: str) -> int:
    count, _, lanes = scalar[1:].partition("x")  # f16x2 is two halves
    return int(count) * (int(lanes) if lanes else 1)


def _last_whole_line(text: str) -> int:
    """Where a truncated file's last complete line ends: a cut-off last line is not read."""
    return len(text) if text.endswith("\n") else text.rfind("\n") + 1
