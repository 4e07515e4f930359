"""Basic blocks of one function's instruction stream, shared by the AMDGCN, PTX and SASS parsers.

A block starts at the first instruction, at every label a branch can reach (the parser
says which labels start blocks: `.LBB0_3:` does, a `.Ltmp4:` debug label does not), and
after every branch or program end. Its successors follow from its last instruction:
the branch targets, plus the next block when the branch is conditional or the block
does not end in a branch at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irscope.isa.model import BasicBlock


@dataclass
class BlockBuilder:
    """Collects what the parser sees while it walks a function; `build()` cuts the blocks."""

    leaders: dict[int, str | None] = field(default_factory=lambda: {0: None})
    labels: dict[str, int] = field(default_factory=dict)  # label -> index of the next instruction
    branches: dict[int, tuple[tuple[str, ...], bool]] = field(default_factory=dict)
    hints: dict[int, int] = field(default_factory=dict)  # instruction index -> loop depth comment

    def label(self, name: str, at: int, starts_block: bool = True) -> None:
        self.labels[name] = at
        if starts_block:
            self.leaders[at] = name if self.leaders.get(at) is None else self.leaders[at]

    def block_start(self, at: int) -> None:
        self.leaders.setdefault(at, None)

    def branch(self, at: int, targets: tuple[str, ...], falls_through: bool) -> None:
        """Instruction `at` may jump to `targets`; `falls_through` if it can also go on."""
        self.branches[at] = (targets, falls_through)
        self.leaders.setdefault(at + 1, None)

    def hint(self, at: int, depth: int) -> None:
        self.hints.setdefault(at, depth)

    def build(self, lines: list[int]) -> tuple[tuple[BasicBlock, ...], dict[str, int]]:
        n = len(lines)
        for targets, _ in self.branches.values():
            for target in targets:
                if target in self.labels:
                    self.leaders.setdefault(self.labels[target], target)
        starts = sorted(i for i in self.leaders if i < n) or [0]
        block_at = {start: b for b, start in enumerate(starts)}
        blocks = []
        new = tuple.__new__  # BasicBlock is a named tuple: built without its Python-level __new__
        branches, labels, leaders, hints = self.branches, self.labels, self.leaders, self.hints
        ends = starts[1:] + [n]
        for b, (start, end) in enumerate(zip(starts, ends)):
            last = end - 1
            if last in branches:
                targets, falls_through = branches[last]
                successors: list[int] = []
                for target in targets:
                    at = labels.get(target)
                    if at is not None and at in block_at:
                        successors.append(block_at[at])
                if falls_through and end < n:
                    successors.append(b + 1)
                succ = tuple(dict.fromkeys(successors))
            else:
                succ = (b + 1,) if end < n else ()
            blocks.append(new(BasicBlock, (b, start, end, lines[start] if start < n else 0, leaders.get(start),
                                           succ, hints.get(start))))
        label_blocks = {name: block_at[at] for name, at in self.labels.items() if at in block_at}
        return tuple(blocks), label_blocks
