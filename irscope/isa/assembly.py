"""A kernel's assembly as instruction graphs: its AMDGCN, or its PTX and (on request) SASS.

AMDGCN and PTX are text Triton writes into the cache. SASS is not: it comes from running
`nvdisasm` (or `cuobjdump -sass`) on the cubin, found as irscope/isa/nvtools.py describes,
so it is read only when asked for (`sass=True`). Without the tool irscope still reads
everything else and reports, as a warning, what it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass

from irscope.isa.model import IsaProgram
from irscope.model.kernel import Kernel, Problem
from irscope.model.errors import decode_text
from irscope.isa.resources import parse_artifact

ISA_STAGES = ("amdgcn", "ptx")


@dataclass(frozen=True)
class Assembly:
    programs: tuple[IsaProgram, ...]
    problems: tuple[Problem, ...] = ()

    def program(self, isa: str) -> IsaProgram | None:
        return next((p for p in self.programs if p.isa == isa), None)


def read_assembly(kernel: Kernel, sass: bool = False) -> Assembly:
    """Parse the kernel's `.amdgcn` / `.ptx` (and its cubin's SASS when `sass`)."""
    from irscope.parsers.amdgcn import parse_amdgcn
    from irscope.parsers.ptx import parse_ptx

    parsers = {"amdgcn": parse_amdgcn, "ptx": parse_ptx}
    programs: list[IsaProgram] = []
    problems: list[Problem] = []
    for stage in ISA_STAGES:
        artifact = kernel.artifact(stage)
        if artifact is None:
            continue
        read = parsers[stage]
        program = parse_artifact(artifact, lambda data, path, read=read: read(decode_text(data, path), path), problems)
        if program is None:
            continue
        programs.append(program)
        if not program.functions:
            problems.append(Problem(artifact.path, f"no function in the {stage} (the file is empty or cut short?)"))
        problems.extend(_unparsed_problems(program))
    cubin = kernel.artifact("cubin")
    if sass and cubin is not None:
        from irscope.isa.nvtools import load_sass

        data = parse_artifact(cubin, lambda data, path: data, problems)  # the harvested file, read once
        program, problem = load_sass(cubin.path, data=data) if data is not None else (None, None)
        if program is not None:
            programs.append(program)
            problems.extend(_unparsed_problems(program))
        if problem is not None:
            problems.append(problem)
    return Assembly(tuple(programs), tuple(problems))


def _unparsed_problems(program: IsaProgram) -> list[Problem]:
    """Lines of the instruction stream the parser could not place: counted, first one named."""
    unparsed = program.unparsed_in_code
    if not unparsed:
        return []
    cut = next((u for u in unparsed if u.reason.startswith("truncated")), None)
    if cut is not None:  # the likelier cause of the other lines too (a line cut in half)
        more = f" ({len(unparsed) - 1} line(s) unrecognized too)" if len(unparsed) > 1 else ""
        # An error: what was cut off (a loop, the metadata) is lost, so the findings may be too (exit 3).
        return [Problem(program.path, cut.reason + more, cut.line)]
    first = unparsed[0]
    more = f" (and {len(unparsed) - 1} more)" if len(unparsed) > 1 else ""
    return [Problem(program.path, f"unrecognized {program.isa} line: {first.text[:80]!r}{more}", first.line,
                    severity="warning")]
