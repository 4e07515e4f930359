"""What the narrow global load and store rules share: the join of ISA and TTGIR, the words."""

from __future__ import annotations

from irscope.engine.context import Analysis, SharedKey
from irscope.ir.layouts.access_width import COPY, RUNTIME, ir_accesses

CAUSES = {
    "alignment": "the layout gives each thread {layout} contiguous bytes, so the compiler either could not prove "
                 "the pointers' alignment, or a mask with a runtime bound splits the access",
    "stride": "the layout gives each thread {layout} contiguous bytes, but the memory stride of that dimension is a "
              "runtime value the compiler cannot prove to be 1",
    "contiguity": "each thread holds {elements} elements, but Triton could not prove any of them contiguous and "
                  "aligned, so its layout gives each thread 1-element runs",
    "matrix": "the tile is stored straight from the {matrix} accumulator layout, which gives each lane {run} "
              "consecutive elements along dimension {run_dim} (memory stride {stride}) but 1 at a time along "
              "dimension {dim}, the contiguous one",
}

FACTS_FIX = ("make the pointer facts visible: unit strides as tl.constexpr, 16-divisible strides, tl.multiple_of / "
             "tl.max_contiguous on the offsets; a mask `offs < n` keeps whole vectors only when n's divisibility is "
             "known (not in do_not_specialize, or padded to the vector)")
MATRIX_FIX = ("put the accumulator's runs along the contiguous dimension: compute the transposed tile instead "
              "(tl.dot(tl.trans(b), tl.trans(a)) gives C^T, whose runs then lie along C's dimension {dim}) and "
              "store it through pointers transposed to match, or make the output contiguous along dimension {run_dim}; "
              "matrix_instr_nonkdim does not move the runs")
OLD_MFMA = ("Triton 3.2 and later pick the transposed MFMA layout for a dot that is not part of a chain, whose runs "
            "lie along N: upgrading widens these stores; on this version, ")

MATRIX_NAMES = {"AmdMfma": "MFMA", "AmdWmma": "WMMA", "NvidiaMma": "MMA"}


def narrow_findings(rule, ctx, narrow_accesses):
    module = ctx.ttgir
    if module is None:
        return []
    facts = ctx.layout_facts
    ir = ctx.shared(SharedKey(Analysis.IR_ACCESSES), lambda: ir_accesses(
        module, facts.user_file if facts else None, facts.op_names if facts else None))
    findings = []
    for program in ctx.programs:
        if program.isa not in ("amdgcn", "ptx"):
            continue
        for fn in program.functions:
            for n in narrow_accesses(program, fn, ctx.graph(program, fn), ir, rule.kind, program.target or ctx.arch):
                first = next(i for i in fn.instructions if i.line == n.lines[0])
                opcode = first.opcode + (" ... lds" if first.memory.to_lds and "lds" not in first.opcode else "")
                where = f"{n.in_loop} in loops" if n.in_loop else "none in a loop"
                what = f"{rule.what}s" if n.family != COPY else f"copies into {_shared_word(program)}"
                findings.append(rule.finding(
                    ctx, stage=program.isa, path=program.path, lines=n.lines,
                    python=(first.source.file, first.source.line) if first.source else None,
                    severity="warning" if n.in_loop or n.count >= 4 else "info",
                    message=f"{n.count} {what} of {n.width} B per lane ({opcode}; {where}) from line "
                            f"{n.python_line}: {_cause_text(n)}",
                    fix=_fix(ctx, n),
                    evidence={"width_bytes": n.width, "count": n.count, "in_loop": n.in_loop,
                              "layout_bytes": n.layout_bytes, "elements_per_thread": n.elements_per_thread},
                ))
    return findings


def _shared_word(program) -> str:
    return "LDS" if program.isa == "amdgcn" else "shared memory"


def _cause_text(n) -> str:
    a = n.access
    if n.cause == "matrix":
        run_dim, run = a.run
        stride = a.memory_strides[run_dim]
        return CAUSES["matrix"].format(matrix=MATRIX_NAMES.get(a.base_layout, "MMA"), run=run, run_dim=run_dim,
                                       stride="a runtime value" if stride == RUNTIME else stride,
                                       dim=a.memory_strides.index(1))
    return CAUSES[n.cause].format(layout=n.layout_bytes, elements=n.elements_per_thread)


def _fix(ctx, n) -> str:
    if n.cause != "matrix":
        return FACTS_FIX
    fix = MATRIX_FIX.format(run_dim=n.access.run[0], dim=n.access.memory_strides.index(1))
    version = ctx.kernel.triton_version.value if ctx.kernel.triton_version else ""
    if n.access.base_layout == "AmdMfma" and n.access.run[0] == 0 and version.startswith(("3.0", "3.1")):
        return OLD_MFMA + fix
    return fix
