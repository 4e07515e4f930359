"""Control-flow graph and natural loops of one assembly function (AMDGCN, PTX or SASS).

Loops come from back edges (an edge u -> h where h dominates u), not from the
`Loop Header: Depth=N` comments: Triton 3.0 writes none, and PTX/SASS may drop them.
The comments are kept on BasicBlock.loop_hint so tests can check the two agree.
Irreducible cycles (entered at more than one block) are not loops here; Triton does not
emit them.

The analysis runs on the blocks' successor lists directly (dominators by Cooper, Harvey
and Kennedy's iterative algorithm): a kernel has a few hundred blocks, and building a
networkx graph for them cost more than the rest of the per-kernel analysis. This is
irscope's one dominator and loop analysis: rules ask `FunctionGraph` (through
`ctx.graph`), not networkx.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter

from irscope.isa.model import IsaFunction


@dataclass(frozen=True)
class Loop:
    header: int  # block index
    latches: tuple[int, ...]  # blocks with the back edges
    blocks: frozenset[int]
    depth: int  # 1 for an outermost loop
    parent: int | None  # header of the enclosing loop


class FunctionGraph:
    """The CFG of a function with its loops; built on first use and cached."""

    def __init__(self, fn: IsaFunction) -> None:
        self.fn = fn

    @cached_property
    def _successors(self) -> list:
        return [b.successors for b in self.fn.blocks]

    @cached_property
    def _predecessors(self) -> list[list[int]]:
        predecessors: list[list[int]] = [[] for _ in self.fn.blocks]
        for b, succ in enumerate(self._successors):
            for s in succ:
                predecessors[s].append(b)
        return predecessors

    @cached_property
    def loops(self) -> tuple[Loop, ...]:
        if not self.fn.blocks:
            return ()
        successors, predecessors = self._successors, self._predecessors
        idom = immediate_dominators(successors, predecessors)
        # h dominates u iff u sits in h's subtree of the dominator tree: one walk numbers the
        # tree (entry and exit times), and each edge is then tested in O(1).
        children: dict[int, list[int]] = {}
        for b, up in idom.items():
            if b != up:
                children.setdefault(up, []).append(b)
        enter: dict[int, int] = {}
        leave: dict[int, int] = {}
        clock = 0
        stack = [(0, iter(children.get(0, ())))]
        enter[0] = clock
        while stack:
            node, it = stack[-1]
            child = next(it, None)
            clock += 1
            if child is None:
                leave[node] = clock
                stack.pop()
            else:
                enter[child] = clock
                stack.append((child, iter(children.get(child, ()))))
        bodies: dict[int, set[int]] = {}
        latches: dict[int, list[int]] = {}
        for u, succ in enumerate(successors):  # latches come out in block order
            if u not in idom:
                continue
            for h in succ:
                if h in enter and enter[h] <= enter[u] and leave[u] <= leave[h]:
                    bodies.setdefault(h, {h}).update(_reaching(predecessors, u, h))
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

    @cached_property
    def _innermost(self) -> tuple[Loop | None, ...]:
        """Per block, the innermost loop holding it (the first of the deepest, in header order)."""
        out: list[Loop | None] = [None] * len(self.fn.blocks)
        for loop in self.loops:
            for b in loop.blocks:
                if out[b] is None or loop.depth > out[b].depth:
                    out[b] = loop
        return tuple(out)

    @cached_property
    def _block_at(self) -> list[int]:
        """Block index of every instruction (rules ask loop_of for each of thousands)."""
        out: list[int] = []
        for b in self.fn.blocks:
            out.extend([b.index] * (b.end - b.start))
        return out

    def every_iteration(self, loop: Loop) -> frozenset[int]:
        """Blocks of the loop that dominate all its latches: every iteration passes them. The
        dominators are those of the loop body entered at the header (the back edges, into the
        header, change no dominator)."""
        inside = loop.blocks
        successors: list[tuple[int, ...]] = [()] * len(self.fn.blocks)
        predecessors: list[list[int]] = [[] for _ in self.fn.blocks]
        for u in inside:
            successors[u] = tuple(s for s in self._successors[u] if s in inside)
            for s in successors[u]:
                predecessors[s].append(u)
        idom = immediate_dominators(successors, predecessors, loop.header)

        def dominates(a: int, b: int) -> bool:
            while True:
                if a == b:
                    return True
                up = idom.get(b)
                if up is None or up == b:
                    return False
                b = up

        return frozenset(b for b in inside if all(dominates(b, latch) for latch in loop.latches))

    def innermost_members(self) -> dict[int, list[int]]:
        """Per loop header, the instructions (indices, in code order) whose innermost loop it is: loop_of
        of every instruction, without a call per instruction (machine_loops asks for all of them)."""
        at, innermost, block_of = self._block_at, self._innermost, self.fn.block_of
        n = len(at)
        out: dict[int, list[int]] = {}
        for i in map(_INDEX, self.fn.instructions):
            loop = innermost[at[i] if 0 <= i < n else block_of(i).index]
            if loop is not None:
                members = out.get(loop.header)
                if members is None:
                    out[loop.header] = [i]
                else:
                    members.append(i)
        return out

    def loop_of(self, instruction: int) -> Loop | None:
        """The innermost loop holding an instruction."""
        at = self._block_at
        block = at[instruction] if 0 <= instruction < len(at) else self.fn.block_of(instruction).index
        return self._innermost[block]


_INDEX = attrgetter("index")


def immediate_dominators(successors: list, predecessors: list, start: int = 0) -> dict[int, int]:
    """Immediate dominator of every block reachable from `start` (start maps to itself)."""
    post: list[int] = []
    seen = {start}
    stack = [(start, iter(successors[start]))]
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(successors[s])))
                break
        else:
            post.append(node)
            stack.pop()
    number = {b: k for k, b in enumerate(post)}  # postorder: start has the highest
    idom = {start: start}
    changed = True
    while changed:
        changed = False
        for b in reversed(post[:-1]):
            new = -1
            for p in predecessors[b]:
                if p not in idom:
                    continue
                if new < 0:
                    new = p
                    continue
                u, v = p, new
                while u != v:
                    while number[u] < number[v]:
                        u = idom[u]
                    while number[v] < number[u]:
                        v = idom[v]
                new = u
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _reaching(predecessors: list[list[int]], latch: int, header: int) -> set[int]:
    """Blocks that reach `latch` without passing through `header`: the natural loop body."""
    body, stack = {latch}, [latch]
    while stack:
        n = stack.pop()
        if n == header:
            continue
        for p in predecessors[n]:
            if p not in body:
                body.add(p)
                stack.append(p)
    return body
