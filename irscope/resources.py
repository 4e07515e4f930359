"""Resource usage of one kernel, read from the artifacts its backend writes.

AMD: the `.amdgcn` (register, scratch and static-LDS figures).
NVIDIA: the `.cubin` (registers, local memory, static shared) and the `.ptx`
(launch bounds). Each artifact is read once; a broken one is a Problem naming it.
"""

from __future__ import annotations

from irscope.model import Kernel, NvidiaResources, Problem, Resources, Target
from irscope.parsers.amdgcn_resources import parse_amd_resources
from irscope.parsers.cubin import parse_cubin
from irscope.parsers.errors import ArtifactError, decode_text
from irscope.parsers.ptx_directives import parse_ptx_directives


def read_resources(kernel: Kernel, target: Target | None) -> tuple[Resources | None, list[Problem]]:
    backend = target.backend if target else _backend_from_artifacts(kernel)
    problems: list[Problem] = []
    if backend == "hip":
        asm = kernel.artifact("amdgcn")
        if asm is None:
            return None, problems
        try:
            text = decode_text(asm.read_bytes(), asm.path)
            return parse_amd_resources(text, asm.path, kernel.name), problems
        except ArtifactError as exc:
            problems.append(Problem(exc.path, exc.message, exc.line))
        except OSError as exc:
            problems.append(Problem(asm.path, f"cannot read: {exc.strerror}"))
        return None, problems
    if backend == "cuda":
        facts: dict = {}
        for stage in ("ptx", "cubin"):
            artifact = kernel.artifact(stage)
            if artifact is None:
                continue
            try:
                data = artifact.read_bytes()
                if stage == "ptx":
                    facts.update(parse_ptx_directives(decode_text(data, artifact.path), artifact.path))
                else:
                    facts.update(parse_cubin(data, artifact.path, kernel.name))
            except ArtifactError as exc:
                problems.append(Problem(exc.path, exc.message, exc.line))
            except OSError as exc:
                problems.append(Problem(artifact.path, f"cannot read: {exc.strerror}"))
        return (NvidiaResources(**facts) if facts else None), problems
    return None, problems


def _backend_from_artifacts(kernel: Kernel) -> str | None:
    stages = set(kernel.stages)
    if stages & {"amdgcn", "hsaco"}:
        return "hip"
    if stages & {"ptx", "cubin"}:
        return "cuda"
    return None
