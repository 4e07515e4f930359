"""Launch bounds and the PTX ISA version from a `.ptx` file.

Register and shared-memory figures are not in PTX (ptxas decides them); those come
from the cubin. Forms seen per Triton version: `.maxntid 128, 1, 1` (3.0),
`.reqntid 128, 1, 1` (3.2-3.3), `.reqntid 128` (3.4+), `.maxnreg 128` when set.
"""

from __future__ import annotations

import re

from irscope.model.kernel import Fact, Origin

# Each alternative leads with a literal (`.version`, `.target`, ...), so the regex engine jumps from one
# occurrence to the next instead of trying six alternatives at every line start (the file is ~95% instructions);
# a match counts only where it is the first non-blank of its line (the `^[ \t]*` these directives need).
_DIRECTIVES = re.compile(
    r"""
    \.version[ \t]+(?P<version>\d+\.\d+)          # .version 8.7
    |\.target[ \t]+(?P<target>[\w]+)               # .target sm_90a
    |\.(?P<ntid>reqntid|maxntid)[ \t]+(?P<dims>\d+(?:[ \t]*,[ \t]*\d+)*)   # .reqntid 128
    |\.maxnreg[ \t]+(?P<maxnreg>\d+)               # .maxnreg 128
    |\.local[ \t]+\.align[ \t]+\d+[ \t]+\.b8[ \t]+__local_depot\d+\[(?P<depot>\d+)\]   # an alloca's frame
    |\.global[ \t]+\.align[ \t]+\d+[ \t]+\.b8[ \t]+(?P<trig>__cudart_i2opi_[fd])\[   # sin/cos slow path
    """,
    re.X,
)


def parse_ptx_directives(text: str, path: str) -> dict[str, Fact]:
    """Returns facts keyed `ptx_version`, `ptx_target`, `reqntid` (or maxntid), `maxnreg`, and
    `local_depot` (the bytes of local arrays LLVM gave the thread: allocas it could not keep in
    registers) and `trig_reduction` (libdevice's sin/cos argument-reduction table, whose slow
    path for huge arguments is what such an array holds in Triton kernels) when present."""
    found: dict[str, Fact] = {}

    def put(key: str, value, m: re.Match, detail: str) -> None:
        # a handful of matches a file: counting the newlines before each costs less than indexing every line
        found.setdefault(key, Fact(value, Origin(path, text.count("\n", 0, m.start()) + 1, detail)))

    for m in _DIRECTIVES.finditer(text):
        start = m.start()
        if text[text.rfind("\n", 0, start) + 1:start].strip(" \t"):
            continue  # not the first non-blank of its line
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
