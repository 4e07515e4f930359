"""scan: harvest -> parse -> model -> Report. The one pipeline every command runs."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from datetime import datetime, timezone
from typing import Iterable, Mapping, Sequence

from irscope import __version__
from irscope.assembly import read_assembly
from irscope.harvester import harvest
from irscope.instruction_mix import instruction_mix
from irscope.launches import Launch
from irscope.layout_summary import summarize
from irscope.model import Kernel, KernelReport, Problem
from irscope.occupancy import kernel_occupancy
from irscope.report import Report
from irscope.resources import read_resources
from irscope.rule_context import KernelContext
from irscope.rule_engine import RuleSelection, run_rules
from irscope.targets import infer_from_ir


def scan(paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None, sass: bool = False,
         rules: RuleSelection | None = None, launches: Mapping[str, tuple[Launch, ...]] | None = None,
         index: bool | str | os.PathLike = False) -> Report:
    """Analyze every kernel under `paths` (default: the user's Triton cache).

    `sass`: also disassemble each cubin with nvdisasm (irscope/nvtools.py) and count its SASS.
    `rules`: which rules run (default: all; the CLI reads `[tool.irscope]`).
    `launches`: kernel hash -> launches recorded by irscope/runner.py.
    `index`: reuse and keep results in irscope's result index (irscope/result_index.py):
    True for the default directory, or a directory; the CLI's default (`--no-cache` is False).
    """
    found = harvest(paths)
    selection = rules or RuleSelection()
    launches = launches or {}
    store = None
    if index:
        from irscope.result_index import ResultIndex, salt_for

        store = ResultIndex(None if index is True else Path(index), salt_for(selection.rules(), f"sass={sass}"))

    def analyze(k: Kernel) -> KernelReport:
        problems, recorded = found.problems.get(k.key, ()), launches.get(k.hash or "", ())
        if store is None or recorded:
            return analyze_kernel(k, problems, sass, selection, recorded)
        key = store.key(k, repr(problems))
        cached = store.get(key)
        if cached is not None and cached.kernel == k:
            return cached
        result = analyze_kernel(k, problems, sass, selection)
        store.put(key, result)
        return result

    kernels = tuple(analyze(k) for k in found.kernels)
    return Report(
        irscope_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        roots=found.roots,
        kernels=kernels,
        problems=found.problems.get("", ()),
        skipped=found.skipped,
    )


def empty_report(roots: tuple[str, ...]) -> Report:
    """A report of no kernels (a script run that compiled none)."""
    return Report(irscope_version=__version__, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  roots=roots, kernels=())


def analyze_kernel(kernel: Kernel, problems: Sequence[Problem] = (), sass: bool = False,
                   rules: RuleSelection | None = None, launches: Sequence[Launch] = ()) -> KernelReport:
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
    assembly = read_assembly(kernel, sass=sass)
    occupancy, unknown = kernel_occupancy(kernel, resources) if resources is not None else (None, [])
    context = KernelContext(kernel, resources, assembly.programs, occupancy, launches)
    # One CFG and loop analysis per function, for the mix and the rules alike.
    mix = tuple(instruction_mix(p, fn, context.graph(p, fn)) if (fn := p.function()) else instruction_mix(p)
                for p in assembly.programs)
    findings, rule_problems = run_rules(context, rules)
    layouts = summarize(context.layout_facts) if context.layout_facts is not None else None
    return KernelReport(kernel=kernel, resources=resources, problems=tuple(problems) + tuple(more)
                        + assembly.problems + tuple(unknown) + tuple(rule_problems), mix=mix, occupancy=occupancy,
                        findings=tuple(findings), layouts=layouts, launches=tuple(launches))
