"""Launch bounds and the PTX ISA version from a `.ptx` file.

Register and shared-memory figures are not in PTX (ptxas decides them); those come
from the cubin. Forms seen per Triton version: `.maxntid 128, 1, 1` (3.0),
`.reqntid 128, 1, 1` (3.2-3.3), `.reqntid 128` (3.4+), `.maxnreg 128` when set.
"""

from __future__ import annotations

import re

from irscope.model.kernel import Fact, Origin
from irscope.parsers.lines import LineIndex

_DIRECTIVES = re.compile(
    r"""
    ^[ \t]*\.version[ \t]+(?P<version>\d+\.\d+)          # .version 8.7
    |^[ \t]*\.target[ \t]+(?P<target>[\w]+)               # .target sm_90a
    |^[ \t]*\.(?P<ntid>reqntid|maxntid)[ \t]+(?P<dims>\d+(?:[ \t]*,[ \t]*\d+)*)   # .reqntid 128
    |^[ \t]*\.maxnreg[ \t]+(?P<maxnreg>\d+)               # .maxnreg 128
    |^[ \t]*\.local[ \t]+\.align[ \t]+\d+[ \t]+\.b8[ \t]+__local_depot\d+\[(?P<depot>\d+)\]   # an alloca's frame
    |^[ \t]*\.global[ \t]+\.align[ \t]+\d+[ \t]+\.b8[ \t]+(?P<trig>__cudart_i2opi_[fd])\[   # sin/cos slow path
    """,
    re.M | re.X,
)


def parse_ptx_directives(text: str, path: str) -> dict[str, Fact]:
    """Returns facts keyed `ptx_version`, `ptx_target`, `reqntid` (or maxntid), `maxnreg`, and
    `local_depot` (the bytes of local arrays LLVM gave the thread: allocas it could not keep in
    registers) and `trig_reduction` (libdevice's sin/cos argument-reduction table, whose slow
    path for huge arguments is what such an array holds in Triton kernels) when present."""
    lines = LineIndex(text)
    found: dict[str, Fact] = {}

    def put(key: str, value, m: re.Match, detail: str) -> None:
        found.setdefault(key, Fact(value, Origin(path, lines.line_of(m.start()), detail)))

    for m in _DIRECTIVES.finditer(text):
        if m["version"]:
            put("ptx_version", m["version"], m, ".version")
        elif m["target"]:
            put("ptx_target", m["target"], m, ".target")
        elif m["ntid"]:
            dims = tuple(int(d) for d in re.split(r"[ \t]*,[ \t]*", m["dims"]))
            put("reqntid", dims, m, f".{m['ntid']}")
        elif m["maxnreg"]:
            put("maxnreg", int(m["maxnreg"]), m, ".maxnreg")
        elif m["depot"]:
            put("local_depot", int(m["depot"]), m, "__local_depot")
        elif m["trig"]:
            put("trig_reduction", m["trig"], m, "libdevice's Payne-Hanek table")
    return found
