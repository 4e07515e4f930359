"""A kernel's pass timeline from an MLIR_ENABLE_DUMP log, and which pass put each layout
conversion and LDS buffer of the final TTGIR there.

The dump holds the IR *before* each pass, so pass k changed the IR when the dump before
pass k+1 differs from the dump before pass k. The final TTGIR is the dump before the
pass that lowers TritonGPU to LLVM. Each `convert_layout` and `local_alloc` there is
identified by its op, its two types with the layout aliases resolved (each dump numbers
`#blocked1` its own way) and its Python line; the pass that introduced it is the one
after the last dump that has fewer of them. This answers the ROCm guide's "activate the
MLIR dump and check which optimization pass caused the problem".
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from irscope.model.pass_timeline import Origin, PassStep, PassTimeline
from irscope.parsers.mlir_dump import DumpKernel, MlirDump

LOWERING = re.compile(r"^Convert\w*(TritonGPU|TritonAMDGPU|TritonNVIDIAGPU)ToLLVM$|^ConvertTritonGPUToLLVM")
_ALIAS = re.compile(r"^(#[\w.$-]+) = (.*)$")
_LOC_DEF = re.compile(r'^(#loc\d*) = loc\((.*)\)$')
_FILE_LINE = re.compile(r'"([^"]+)":(\d+):\d+')
_OP = re.compile(r"(?:ttg|triton_gpu)\.(convert_layout|local_alloc)\b")
_TRAILING_LOC = re.compile(r"\s+loc\((#loc\d*|[^()]*(?:\([^()]*\))*[^()]*)\)\s*$")
_ALIAS_REF = re.compile(r"#[A-Za-z_][\w.$-]*")


@dataclass(frozen=True)
class PassChange:
    """What one pass did: the IR before it and after it (the dump before the next pass), each
    with the dump lines it came from. `after` is None for the last pass (nothing was dumped
    after it)."""

    step: PassStep
    before: tuple[str, ...]
    after: tuple[str, ...] | None
    before_lines: tuple[int, int]
    after_lines: tuple[int, int] | None


def dump_lines(t: PassTimeline) -> Sequence[str]:
    """The lines of the dump `t` was read from (plain or gzipped). Raises OSError or
    ArtifactError when it is gone or unreadable."""
    from irscope.parsers.mlir_dump import read_dump

    return read_dump(t.path).lines


def pass_change(t: PassTimeline, index: int, lines: Sequence[str] | None = None) -> PassChange:
    """The IR before and after pass `index` of `t`, from the dump's `lines` (default: read it).
    Raises ValueError when the timeline was saved without the dump's line ranges (an older
    irscope), and what dump_lines raises."""
    steps = {p.index: p for p in t.passes}
    step, nxt = steps[index], steps.get(index + 1)
    if step.first_line is None or step.last_line is None:
        raise ValueError(f"{t.path}: this timeline does not say where each pass's IR is; scan again")
    lines = dump_lines(t) if lines is None else lines
    before = tuple(lines[step.first_line - 1:step.last_line])
    if nxt is None or nxt.first_line is None or nxt.last_line is None:
        return PassChange(step, before, None, (step.first_line, step.last_line), None)
    return PassChange(step, before, tuple(lines[nxt.first_line - 1:nxt.last_line]),
                      (step.first_line, step.last_line), (nxt.first_line, nxt.last_line))


def timelines(dump: MlirDump) -> tuple[PassTimeline, ...]:
    return tuple(kernel_timeline(dump, k) for k in dump.kernels)


def kernel_timeline(dump: MlirDump, kernel: DumpKernel) -> PassTimeline:
    final = next((p.index for p in kernel.passes if LOWERING.match(p.name)), None)
    # One pass's text at a time, compared with the one before: the dump is never held twice.
    changed: list[bool | None] = []
    counts: list[Counter] = []
    before: list[str] | None = None
    num_warps = shared = None
    for p in kernel.passes:
        text = dump.text(p)
        body = [line for line in text if not line.startswith("#loc")]
        if before is not None:
            changed.append(body != before)
        before = body
        if final is not None and p.index <= final:
            counts.append(_layout_ops(text))
            if p.index == final:
                head = "\n".join(text[:200])
                num_warps, shared = _module_int(head, "num-warps"), _module_int(head, "shared")
    changed.append(None)
    steps = tuple(PassStep(p.index, p.name, p.anchor, p.symbol, p.header_line, changed[i], p.first_line, p.last_line)
                  for i, p in enumerate(kernel.passes))
    origins = tuple(_origins(kernel, counts, final)) if final is not None else ()
    return PassTimeline(dump.path, kernel.name, steps, final, origins, num_warps, shared)


def _module_int(text: str, name: str) -> int | None:
    m = re.search(rf'"?(?:ttg|triton_gpu)\.{name}"?\s*=\s*(\d+)', text)
    return int(m.group(1)) if m else None


def _origins(kernel: DumpKernel, counts: list[Counter], final: int):
    for key, wanted in sorted(counts[final].items(), key=lambda kv: (kv[0][2] or 0, kv[0][0], kv[0][1])):
        last_short = max((i for i in range(final) if counts[i][key] < wanted), default=None)
        if last_short is None:
            continue  # present from the first dump: not made by a pass of this pipeline
        p = kernel.passes[last_short]
        op, types, line = key
        yield Origin(op, types, line, wanted, p.name, p.index, p.header_line)


def _layout_ops(lines: list[str]) -> Counter:
    """(op, resolved types, Python line) -> count, for one dump of the module.

    Read with regexes, not parse_mlir: a timeline reads every pass's module, and parsing them all
    (lowered LLVM-dialect modules included) took 6-15 s per fixture GEMM dump against 0.02-0.04 s
    here; only the convert_layout / local_alloc lines and the alias and #loc definitions matter."""
    aliases, locs = {}, {}
    for line in lines:
        if line.startswith("#loc"):
            m = _LOC_DEF.match(line)
            if m:
                locs[m.group(1)] = m.group(2)
        elif line.startswith("#"):
            m = _ALIAS.match(line)
            if m:
                aliases[m.group(1)] = m.group(2)
    found: Counter = Counter()
    for line in lines:
        m = _OP.search(line)
        if m is None or ":" not in line[m.end():]:
            continue
        loc = _TRAILING_LOC.search(line)
        body = line[:loc.start()] if loc else line
        types = _signature(body[m.end():])
        found[(m.group(1), _resolve(types, aliases), _python_line(loc.group(1) if loc else "", locs))] += 1
    return found


def _signature(text: str) -> str:
    """The op's type signature: what follows its last top-level ` : ` (after any attribute
    dict, which passes such as shared-memory allocation add to the op)."""
    depth, cut = 0, -1
    for i, ch in enumerate(text):
        if ch in "{<([":
            depth += 1
        elif ch in "}>)]":
            depth -= 1
        elif ch == ":" and depth == 0 and text[i - 1:i + 2] == " : ":
            cut = i + 2
    return text[cut:].strip() if cut >= 0 else text.strip()


def _resolve(text: str, aliases: dict[str, str], depth: int = 0) -> str:
    if depth > 4:
        return text
    resolved = _ALIAS_REF.sub(lambda m: aliases.get(m.group(0), m.group(0)), text)
    return resolved if resolved == text else _resolve(resolved, aliases, depth + 1)


def _python_line(loc: str, locs: dict[str, str], depth: int = 0) -> int | None:
    """The outermost `"file":line` a location reaches (for a callsite, the caller's line)."""
    text = locs.get(loc, loc) if loc.startswith("#loc") else loc
    while depth < 8 and "#loc" in text:
        text = re.sub(r"#loc\d*", lambda m: f"({locs.get(m.group(0), '')})", text)
        depth += 1
    frames = _FILE_LINE.findall(text)
    return int(frames[-1][1]) if frames else None
