"""What the narrow global load and store rules share: the join of ISA and TTGIR, the words."""

from __future__ import annotations

from irscope.access_width import ir_accesses

CAUSES = {
    "alignment": "the layout gives each thread {layout} contiguous bytes, so the compiler either could not prove "
                 "the pointers' alignment, or a mask with a runtime bound splits the access",
    "stride": "the layout gives each thread {layout} contiguous bytes, but the memory stride of that dimension is a "
              "runtime value the compiler cannot prove to be 1",
    "contiguity": "each thread holds {elements} elements, but Triton could not prove any of them contiguous and "
                  "aligned, so its layout gives each thread 1-element runs",
}


def narrow_findings(rule, ctx, narrow_accesses):
    module = ctx.ttgir
    if module is None:
        return []
    facts = ctx.layout_facts
    ir = ctx.shared(("ir_accesses",), lambda: ir_accesses(module, facts.user_file if facts else None))
    findings = []
    for program in ctx.programs:
        if program.isa not in ("amdgcn", "ptx"):
            continue
        for fn in program.functions:
            for n in narrow_accesses(program, fn, ctx.graph(program, fn), ir, rule.kind):
                first = next(i for i in fn.instructions if i.line == n.lines[0])
                opcode = first.opcode
                where = f"{n.in_loop} in loops" if n.in_loop else "none in a loop"
                cause = CAUSES[n.cause].format(layout=n.layout_bytes, elements=n.elements_per_thread)
                findings.append(rule.finding(
                    ctx, stage=program.isa, path=program.path, lines=n.lines,
                    python=(first.source.file, first.source.line) if first.source else None,
                    severity="warning" if n.in_loop or n.count >= 4 else "info",
                    message=f"{n.count} {rule.what}s of {n.width} B per lane ({opcode}; {where}) from line "
                            f"{n.python_line}: {cause}",
                    fix="make the pointer facts visible: unit strides as tl.constexpr, 16-divisible strides, "
                        "tl.multiple_of / tl.max_contiguous on the offsets; a mask `offs < n` keeps whole vectors "
                        "only when n's divisibility is known (not in do_not_specialize, or padded to the vector)",
                    evidence={"width_bytes": n.width, "count": n.count, "in_loop": n.in_loop,
                              "layout_bytes": n.layout_bytes, "elements_per_thread": n.elements_per_thread},
                ))
    return findings
