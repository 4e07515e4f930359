"""Cyclic garbage collection paused while a parser builds its model.

A parse allocates thousands of tuples (an Instruction and its operands per line) and frees
almost nothing until it returns; what it builds is acyclic. At Python's default threshold a
collection runs every 700 allocations and walks the young objects, and every tenth one
everything the caller holds as well: reading the bench corpus's ISA files with their results
kept, half the time went there (bench/bench_isa_parse.py). parse_mlir (parsers/mlir_parser.py)
pauses it the same way for the TTGIR token tree and model, and instruction_mix while it counts.
The caller's setting is restored, also when the parse raises.
"""

from __future__ import annotations

import functools
import gc
from typing import Callable, TypeVar

T = TypeVar("T")


def collections_paused(build: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(build)
    def paused(*args, **kwargs) -> T:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()
    return paused
