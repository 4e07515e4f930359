"""One kernel's analysis: its files read once, parsed, and every selected rule run over them (`analyze_kernel`),
or only the rules that quote an option a twin differs in (`quoting_findings`, irscope/pipeline/twins.py).
irscope/pipeline/analyze.py hands kernels to it, in worker processes or in its own."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from irscope.engine.context import KernelContext
from irscope.engine.selection import RuleSelection, run_rules
from irscope.ir.artifact_shape import shape_problems
from irscope.ir.layouts.summary import summarize
from irscope.ir.specialization import specialization_of
from irscope.ir.targets import infer_from_ir
from irscope.isa.assembly import read_assembly
from irscope.isa.mix import instruction_mix
from irscope.isa.resources import read_resources
from irscope.model.artifact_reader import one_read_each
from irscope.model.findings import Finding
from irscope.model.kernel import Kernel, KernelReport, Problem
from irscope.model.launches import Launch
from irscope.occupancy.calculator import kernel_occupancy


def analyze_kernel(kernel: Kernel, problems: Sequence[Problem] = (), sass: bool = False,
                   rules: RuleSelection | None = None, launches: Sequence[Launch] = ()) -> KernelReport:
    # Each artifact read once for all the analyses below; the report keeps the digest of what was read.
    with one_read_each() as digests:
        report = _analyze(kernel, problems, sass, rules, launches)
    artifacts = tuple(replace(a, digest=digests.get(a.path, a.digest)) for a in report.kernel.artifacts)
    return replace(report, kernel=replace(report.kernel, artifacts=artifacts))


def _analyze(kernel: Kernel, problems: Sequence[Problem], sass: bool, rules: RuleSelection | None,
             launches: Sequence[Launch]) -> KernelReport:
    kernel, context, more, assembly, unknown = _context(kernel, sass, launches)
    # One CFG and loop analysis per function, for the mix and the rules alike.
    mix = tuple(instruction_mix(p, fn, context.graph(p, fn)) if (fn := p.function()) else instruction_mix(p)
                for p in assembly.programs)
    # Layouts first: a TTGIR that cannot be read is then among the context's problems run_rules returns.
    layouts = summarize(context.layout_facts) if context.layout_facts is not None else None
    findings, rule_problems = run_rules(context, rules)
    specialization = specialization_of(context.ttgir) if context.ttgir is not None else None
    # dict.fromkeys: one broken file read by two analyses (the .amdgcn for resources and for the ISA) is one problem.
    return KernelReport(kernel=kernel, resources=context.resources, problems=tuple(dict.fromkeys(
                        tuple(problems) + tuple(more) + assembly.problems + tuple(unknown) + tuple(rule_problems))),
                        mix=mix, occupancy=context.occupancy, findings=tuple(findings), layouts=layouts,
                        launches=tuple(launches), specialization=specialization)


def _context(kernel: Kernel, sass: bool, launches: Sequence[Launch]) -> tuple:
    """(the kernel completed from its IR, its KernelContext, the problems of its resources and files, its
    assembly, the problems of its occupancy)."""
    # A TRITON_KERNEL_DUMP directory (or a broken json) leaves these to the IR itself.
    if kernel.target is None or kernel.options.num_warps is None or kernel.triton_version is None:
        ir = infer_from_ir(kernel)
        if kernel.target is None and ir.target is not None:
            kernel = replace(kernel, target=ir.target.value)
        if kernel.options.num_warps is None and ir.num_warps is not None:
            kernel = replace(kernel, options=replace(kernel.options, num_warps=ir.num_warps))
        if kernel.triton_version is None and ir.triton_version is not None:
            kernel = replace(kernel, triton_version=ir.triton_version)
    resources, more = read_resources(kernel, kernel.target)
    more = list(more) + shape_problems(kernel)  # a cut or non-IR .ttir/.llir, which nothing else here parses
    assembly = read_assembly(kernel, sass=sass)
    occupancy, unknown = kernel_occupancy(kernel, resources) if resources is not None else (None, [])
    return kernel, KernelContext(kernel, resources, assembly.programs, occupancy, launches), more, assembly, unknown


def quoting_findings(kernel: Kernel, codes: frozenset[str], sass: bool,
                     selection: RuleSelection) -> tuple[Finding, ...] | None:
    """The findings of the selected rules `codes` alone for `kernel` (a twin whose options those rules quote,
    irscope/pipeline/twins.py): no mix, layouts or other rule. None when anything in it was a problem. Within
    the caller's `one_read_each`, the files that confirmed the twin are not read again."""
    kernel, context, more, assembly, unknown = _context(kernel, sass, ())
    # The scan's own selection decides, its per-kernel ignores included: only its rules of `codes` run.
    rules = [r for r in selection.rules() if r.code in codes and not selection.suppressed(r, kernel.name)]
    findings, rule_problems = run_rules(context, RuleSelection.only(*rules))
    return None if more or assembly.problems or unknown or rule_problems else tuple(findings)
