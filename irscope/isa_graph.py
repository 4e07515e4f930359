"""Control-flow graph and natural loops of one assembly function (AMDGCN, PTX or SASS).

Loops come from back edges (an edge u -> h where h dominates u), not from the
`Loop Header: Depth=N` comments: Triton 3.0 writes none, and PTX/SASS may drop them.
The comments are kept on BasicBlock.loop_hint so tests can check the two agree.
Irreducible cycles (entered at more than one block) are not loops here; Triton does not
emit them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import networkx as nx

from irscope.isa import IsaFunction


@dataclass(frozen=True)
class Loop:
    header: int  # block index
    latches: tuple[int, ...]  # blocks with the back edges
    blocks: frozenset[int]
    depth: int  # 1 for an outermost loop
    parent: int | None  # header of the enclosing loop


def control_flow_graph(fn: IsaFunction) -> nx.DiGraph:
    """Blocks as nodes (index), with `start`, `end`, `label` and `line`; edges from successors."""
    g = nx.DiGraph()
    for b in fn.blocks:
        g.add_node(b.index, start=b.start, end=b.end, label=b.label, line=b.line)
    for b in fn.blocks:
        for s in b.successors:
            g.add_edge(b.index, s)
    return g


class FunctionGraph:
    """The CFG of a function with its loops; built on first use and cached."""

    def __init__(self, fn: IsaFunction) -> None:
        self.fn = fn
        self.cfg = control_flow_graph(fn)

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        if not self.fn.blocks:
            return ()
        idom = nx.immediate_dominators(self.cfg, 0)
        bodies: dict[int, set[int]] = {}
        latches: dict[int, list[int]] = {}
        for u, h in self.cfg.edges:
            if u in idom and _dominates(idom, h, u):
                bodies.setdefault(h, {h}).update(_reaching(self.cfg, u, h))
                latches.setdefault(h, []).append(u)
        # Parents: the smallest other loop whose body holds the header.
        order = sorted(bodies, key=lambda h: len(bodies[h]))
        parent: dict[int, int | None] = {}
        for h in order:
            outer = [o for o in order if o != h and h in bodies[o] and len(bodies[o]) >= len(bodies[h])]
            parent[h] = min(outer, key=lambda o: len(bodies[o])) if outer else None

        def depth(h: int) -> int:
            return 1 if parent[h] is None else 1 + depth(parent[h])

        return tuple(
            Loop(h, tuple(sorted(latches[h])), frozenset(bodies[h]), depth(h), parent[h])
            for h in sorted(bodies)
        )

    @cached_property
    def block_depth(self) -> tuple[int, ...]:
        """Loop depth of every block: 0 outside loops."""
        depth = [0] * len(self.fn.blocks)
        for loop in self.loops:
            for b in loop.blocks:
                depth[b] = max(depth[b], loop.depth)
        return tuple(depth)

    @cached_property
    def instruction_depth(self) -> tuple[int, ...]:
        out: list[int] = []
        for b in self.fn.blocks:
            out.extend([self.block_depth[b.index]] * (b.end - b.start))
        return tuple(out)

    def loop_of(self, instruction: int) -> Loop | None:
        """The innermost loop holding an instruction."""
        block = self.fn.block_of(instruction).index
        inside = [loop for loop in self.loops if block in loop.blocks]
        return max(inside, key=lambda loop: loop.depth) if inside else None


def _dominates(idom: dict[int, int], a: int, b: int) -> bool:
    while True:
        if b == a:
            return True
        up = idom.get(b)
        if up is None or up == b:
            return False
        b = up


def _reaching(g: nx.DiGraph, latch: int, header: int) -> set[int]:
    """Blocks that reach `latch` without passing through `header`: the natural loop body."""
    body, stack = {latch}, [latch]
    while stack:
        n = stack.pop()
        if n == header:
            continue
        for p in g.predecessors(n):
            if p not in body:
                body.add(p)
                stack.append(p)
    return body
