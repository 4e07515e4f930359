"""Resource usage of one kernel, read from the artifacts its backend writes.

AMD: the `.amdgcn` (register, scratch and static-LDS figures).
NVIDIA: the `.cubin` (registers, local memory, static shared) and the `.ptx`
(launch bounds). Each artifact is read once; a broken one is a Problem naming it.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from irscope.model.kernel import AmdResources, Artifact, Kernel, NvidiaResources, Problem, Resources, Target
from irscope.parsers.amdgcn_resources import parse_amd_resources
from irscope.parsers.cubin import parse_cubin
from irscope.model.errors import ArtifactError, decode_text
from irscope.parsers.ptx_directives import parse_ptx_directives

T = TypeVar("T")


def read_resources(kernel: Kernel, target: Target | None) -> tuple[Resources | None, list[Problem]]:
    backend = target.backend if target else _backend_from_artifacts(kernel)
    problems: list[Problem] = []

    def read(stage: str, parse: Callable[[bytes, str], T]) -> T | None:
        artifact = kernel.artifact(stage)
        if artifact is None:
            return None
        return parse_artifact(artifact, parse, problems)

    if backend == "hip":
        amd: AmdResources | None = read(
            "amdgcn", lambda data, path: parse_amd_resources(decode_text(data, path), path, kernel.name))
        return amd, problems
    if backend == "cuda":
        facts = {}
        facts.update(read("ptx", lambda data, path: parse_ptx_directives(decode_text(data, path), path)) or {})
        facts.update(read("cubin", lambda data, path: parse_cubin(data, path, kernel.name)) or {})
        return (NvidiaResources(**facts) if facts else None), problems
    return None, problems


def parse_artifact(artifact: Artifact, parse: Callable[[bytes, str], T], problems: list[Problem]) -> T | None:
    """`parse(bytes, path)` of one artifact; None, with a problem naming the file, when it cannot be
    read or parsed (the resources, the assembly and the IR shape checks all read this way)."""
    try:
        return parse(artifact.read_bytes(), artifact.path)
    except ArtifactError as exc:
        problems.append(Problem(exc.path, exc.message, exc.line))
    except OSError as exc:  # removed or replaced since the harvest listed it
        problems.append(Problem(artifact.path, f"cannot read: {exc.strerror}"))
    return None


def _backend_from_artifacts(kernel: Kernel) -> str | None:
    stages = set(kernel.stages)
    if stages & {"amdgcn", "hsaco"}:
        return "hip"
    if stages & {"ptx", "cubin"}:
        return "cuda"
    return None
