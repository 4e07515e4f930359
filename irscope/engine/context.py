"""One kernel as the rules see it: every artifact parsed at most once, on first use.

The pipeline builds a KernelContext after it has read the kernel's resources, assembly and
occupancy, and hands the same context to every rule. A rule asks for what it needs
(`ctx.ttgir`, `ctx.graph(fn)`, `ctx.waits(fn)`); the first rule to ask pays for the parse,
the others reuse it. A stage that cannot be parsed is recorded once in `problems` and reads
as absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Sequence, TypeVar

from irscope.model.launches import Launch
from irscope.model.kernel import AmdResources, Kernel, NvidiaResources, Problem, Resources
from irscope.occupancy.calculator import KernelOccupancy

T = TypeVar("T")

if TYPE_CHECKING:
    from irscope.isa.amdgcn_dataflow import CounterWait
    from irscope.isa.model import IsaFunction, IsaProgram
    from irscope.isa.graph import FunctionGraph
    from irscope.isa.loops import LoopFacts
    from irscope.ir.layouts.graph import LayoutFacts
    from irscope.ir.mlir import MlirModule


class Analysis(Enum):
    """The facts rules share through `ctx.shared`: one member per analysis."""

    MACHINE_LOOPS = "machine loops"  # irscope/isa/loops.py, per assembly function
    LDS_TILES = "LDS tiles"  # rules/_lds_tiles.py TileIndex of the TTGIR (IRS103)
    IR_ACCESSES = "IR accesses"  # rules/_memory.py: the TTGIR's global accesses


@dataclass(frozen=True)
class SharedKey:
    """A `ctx.shared` key: the analysis, and the assembly function it is of (if it is of one)."""

    analysis: Analysis
    program: str | None = None  # path of the assembly program
    function: str | None = None  # name of the function in it


class KernelContext:
    def __init__(self, kernel: Kernel, resources: Resources | None = None,
                 programs: Sequence[IsaProgram] = (), occupancy: KernelOccupancy | None = None,
                 launches: Sequence[Launch] = ()) -> None:
        self.kernel = kernel
        self.resources = resources
        self.programs = tuple(programs)
        self.occupancy = occupancy
        self.launches = tuple(launches)  # distinct launches recorded by `irscope scan script.py`
        self.problems: list[Problem] = []
        self._graphs: dict[tuple[str, str], FunctionGraph] = {}
        self._waits: dict[tuple[str, str], tuple[CounterWait, ...]] = {}
        self._shared: dict[SharedKey, object] = {}

    # -- what is there ---------------------------------------------------------------------
    @property
    def backend(self) -> str | None:
        if self.kernel.target is not None:
            return self.kernel.target.backend
        if isinstance(self.resources, AmdResources):
            return "hip"
        return "cuda" if isinstance(self.resources, NvidiaResources) else None

    @property
    def arch(self) -> str | None:
        return self.kernel.target.arch if self.kernel.target else None

    def has(self, stage: str) -> bool:
        if stage == "resources":
            return self.resources is not None
        if stage == "occupancy":
            return self.occupancy is not None
        if stage == "launch":
            return bool(self.launches)
        if stage == "sass":
            return self.program("sass") is not None
        if stage in ("amdgcn", "ptx"):
            return self.program(stage) is not None
        return self.kernel.artifact(stage) is not None

    def program(self, isa: str) -> IsaProgram | None:
        return next((p for p in self.programs if p.isa == isa), None)

    # -- parsed once -------------------------------------------------------------------------
    def graph(self, program: IsaProgram, fn: IsaFunction) -> FunctionGraph:
        from irscope.isa.graph import FunctionGraph

        key = (program.path, fn.name)
        if key not in self._graphs:
            self._graphs[key] = FunctionGraph(fn)
        return self._graphs[key]

    def waits(self, program: IsaProgram, fn: IsaFunction) -> tuple[CounterWait, ...]:
        """The s_waitcnt analysis of an AMDGCN function (irscope/isa/amdgcn_dataflow.py)."""
        from irscope.isa.amdgcn_dataflow import waits

        key = (program.path, fn.name)
        if key not in self._waits:
            self._waits[key] = waits(fn, program.target or self.arch, self.graph(program, fn))
        return self._waits[key]

    def loops(self, program: IsaProgram, fn: IsaFunction) -> list[LoopFacts]:
        """The function's loops matched to the TTGIR's scf.for ops (irscope/isa/loops.py)."""
        from irscope.isa.loops import machine_loops

        def build() -> list[LoopFacts]:
            facts = self.layout_facts
            return machine_loops(fn, self.graph(program, fn), self.ttgir, facts.user_file if facts else None)

        return self.shared(SharedKey(Analysis.MACHINE_LOOPS, program.path, fn.name), build)

    def shared(self, key: SharedKey, build: Callable[[], T]) -> T:
        """A fact several rules derive alike (ISA loops matched to TTGIR loops, the TTGIR's
        global accesses), built by the first rule that asks and reused by the others."""
        if not isinstance(key, SharedKey):
            raise TypeError(f"ctx.shared keys are SharedKey, not {type(key).__name__}")
        if key not in self._shared:
            self._shared[key] = build()
        return self._shared[key]

    @cached_property
    def ttgir(self) -> MlirModule | None:
        return self._mlir("ttgir")

    def ttgir_read(self) -> bool:
        """Whether `ttgir` was read already (a scan reads it for the layouts before the rules run): a rule
        that needs one small fact of it may then ask the model, and otherwise look at the text rather
        than parse it for that alone."""
        return "ttgir" in self.__dict__  # where cached_property keeps its value

    @cached_property
    def layout_facts(self) -> LayoutFacts | None:
        from irscope.ir.layouts.graph import LayoutFacts

        module = self.ttgir
        if module is None:
            return None
        version = self.kernel.triton_version.value if self.kernel.triton_version else None
        return LayoutFacts(module, version)

    def _mlir(self, stage: str) -> MlirModule | None:
        from irscope.model.errors import ArtifactError, decode_text
        from irscope.parsers.mlir_parser import parse_mlir

        artifact = self.kernel.artifact(stage)
        if artifact is None:
            return None
        try:
            text = decode_text(artifact.read_bytes(), artifact.path)
            module = parse_mlir(text, artifact.path)
        except ArtifactError as exc:
            self.problems.append(Problem(exc.path, exc.message, exc.line))
            return None
        except OSError as exc:
            self.problems.append(Problem(artifact.path, f"cannot read: {exc.strerror}"))
            return None
        if not module.ops and not module.problems:
            self.problems.append(Problem(artifact.path, f"no operations in the {stage} (empty or cut short?)"))
        elif not module.problems:  # parsed whole, but is it a module ("hello world" reads as one op)?
            from irscope.ir.artifact_shape import mlir_shape_problem

            problem = mlir_shape_problem(text, artifact.path, stage)
            if problem is not None:
                self.problems.append(problem)
        if module.problems:  # text read in part or repaired: the kernel says so, once per file
            first = module.problems[0]
            more = f" (and {len(module.problems) - 1} more)" if len(module.problems) > 1 else ""
            severity = "error" if any(p.severity == "error" for p in module.problems) else "warning"
            self.problems.append(Problem(first.path, first.message[:200] + more, first.line, severity))
        return module
