"""A text diff of one stage of two builds, with the noise that changes on every build taken out.

SSA names, register numbers, labels, `loc(...)` locations, `#loc` aliases, `.loc` lines and
comments differ between any two compiles; with them normalized, what remains is the code
that changed: `global_store_short v[2:3], v4, off` and `global_store_dwordx4 ...` stay apart,
`v17` and `v23` do not.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from irscope.model.kernel import Artifact

STAGES = ("ttir", "ttgir", "llir", "amdgcn", "ptx", "sass")
_RULES = [
    (re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)"), ""),          # MLIR locations
    (re.compile(r"#loc\d*"), "#loc"),
    (re.compile(r"!dbg !\d+"), ""),                                   # LLVM debug attachments
    (re.compile(r"%[\w.$]+(#\d+)?"), "%v"),                           # SSA values (MLIR, LLVM, PTX regs)
    (re.compile(r"\b([vsa])\[\d+:\d+\]"), r"\1[n:m]"),                # AMDGCN register ranges
    (re.compile(r"\b([vsa])\d+\b"), r"\1N"),                          # AMDGCN registers
    (re.compile(r"\bR\d+\b"), "RN"),                                  # SASS registers
    (re.compile(r"(\.LBB|\$L__BB|\.L|\^bb)[\w.]*"), r"\1"),           # labels and blocks
]
_DROP = re.compile(r"^\s*($|;|//|\.loc\b|\.file\b|#loc|\.Ltmp|\$L__tmp|\.cfi_)")


def normalize(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        if _DROP.match(line):
            continue
        line = line.split(" ; ", 1)[0].split("\t; ", 1)[0].split(" // ", 1)[0]  # trailing comments
        for pattern, repl in _RULES:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    return out


def stage_diff(before: Artifact, after: Artifact, context: int = 2) -> list[str]:
    """Unified diff lines of the two artifacts after normalizing; empty when only noise differs.
    An artifact that cannot be read (gone, over the size limit, or one a saved report names that is
    outside the directories the user allowed or not the file its scan read) is one line saying why."""
    from irscope.model.errors import ArtifactError

    texts = []
    for artifact in (before, after):
        try:
            texts.append(normalize(artifact.read_bytes().decode("utf-8", errors="replace")))
        except ArtifactError as exc:
            return [f"(not compared: {exc})"]
        except OSError as exc:
            return [f"(not compared: {artifact.path}: {exc.strerror or exc})"]
    return list(difflib.unified_diff(texts[0], texts[1], before.path, after.path, n=context, lineterm=""))
