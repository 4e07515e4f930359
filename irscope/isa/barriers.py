"""Which assembly instructions are workgroup barriers that wait (AMDGCN and PTX)."""

from __future__ import annotations

from irscope.isa import model as isa


def counts_as_barrier(instr: isa.Instruction) -> bool:
    """A workgroup barrier that waits: `s_barrier`, gfx12's `s_barrier_wait` (its
    `s_barrier_signal` half is not counted again), PTX `bar.sync`/`barrier.sync`/`bar.red`,
    not `bar.arrive`, which does not wait."""
    if instr.kind != isa.BARRIER:
        return False
    op = instr.opcode
    if op.startswith("s_"):
        return op in ("s_barrier", "s_barrier_wait")
    parts = op.split(".")
    return parts[0] in ("bar", "barrier") and "arrive" not in parts
