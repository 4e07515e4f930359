"""Rules do not import rules, ctx.shared keys are typed, and IRS202's every-iteration blocks come
from irscope's one dominator analysis (irscope/isa/graph.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

from conftest import artifact_files
from irscope.engine.context import Analysis, KernelContext, SharedKey
from irscope.isa.graph import FunctionGraph
from irscope.model.kernel import Kernel
from irscope.parsers.amdgcn import parse_amdgcn

RULES = Path(__file__).resolve().parent.parent / "rules"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):  # function-level imports too
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            out.add(base)
            out.update(f"{base}.{a.name}" if node.module else f"{base}{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def rule_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("irs") and last[3:6].isdigit()


@pytest.mark.parametrize("path", sorted(p for p in RULES.glob("*.py") if p.name != "__init__.py"),
                         ids=lambda p: p.name)
def test_no_rule_or_rule_helper_imports_a_rule_module(path):
    assert not [m for m in imported_modules(path) if rule_module(m)]


def test_the_import_check_sees_a_rule_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from irscope.rules.irs202_barriers_per_iteration import BarriersPerIteration\n"
                   "from . import irs301_lds_round_trip\n")
    assert {m for m in imported_modules(bad) if rule_module(m)} == {
        "irscope.rules.irs202_barriers_per_iteration", ".irs301_lds_round_trip"}


def test_shared_builds_once_per_key_and_analyses_do_not_collide():
    ctx = KernelContext(Kernel(key="k", name="k", directory=".", layout="file", artifacts=()))
    built = []

    def build(value):
        def make():
            built.append(value)
            return value
        return make

    assert ctx.shared(SharedKey(Analysis.LDS_TILES), build(1)) == 1
    assert ctx.shared(SharedKey(Analysis.LDS_TILES), build(2)) == 1
    assert ctx.shared(SharedKey(Analysis.IR_ACCESSES), build(3)) == 3
    assert ctx.shared(SharedKey(Analysis.MACHINE_LOOPS, "a.amdgcn", "f"), build(4)) == 4
    assert ctx.shared(SharedKey(Analysis.MACHINE_LOOPS, "a.amdgcn", "g"), build(5)) == 5
    assert built == [1, 3, 4, 5]


def test_shared_refuses_an_untyped_key():
    ctx = KernelContext(Kernel(key="k", name="k", directory=".", layout="file", artifacts=()))
    with pytest.raises(TypeError, match="SharedKey"):
        ctx.shared(("kernel_loops",), lambda: 0)


def networkx_every_iteration(fn, loop) -> frozenset[int]:
    """What IRS202 computed before: networkx's dominators of the loop body without its back edges."""
    body = nx.DiGraph()
    body.add_nodes_from(loop.blocks)
    body.add_edges_from((b.index, s) for b in fn.blocks if b.index in loop.blocks
                        for s in b.successors if s in loop.blocks)
    body.remove_edges_from([(latch, loop.header) for latch in loop.latches])
    idom = nx.immediate_dominators(body, loop.header)

    def dominates(a, b):
        while a != b:
            up = idom.get(b)
            if up is None or up == b:
                return False
            b = up
        return True

    return frozenset(b for b in loop.blocks if all(dominates(b, latch) for latch in loop.latches))


def test_every_iteration_matches_networkx_on_every_amdgcn_loop():
    loops = 0
    for path in artifact_files("hip", "amdgcn", "3.6.0"):
        fn = parse_amdgcn(path.read_text(), str(path)).functions[0]
        graph = FunctionGraph(fn)
        for loop in graph.loops:
            loops += 1
            assert graph.every_iteration(loop) == networkx_every_iteration(fn, loop), (path, loop.header)
    assert loops
