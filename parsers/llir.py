"""The debug metadata of Triton's LLVM IR (`.llir`): `!dbg !N` resolved to kernel source lines.

Not an LLVM parser: one regex picks the DILocation / DIFile / DISubprogram / lexical-block
nodes at the end of the file, and a location is resolved (scope to DIFile, inlinedAt chain
outwards) only when asked for. irscope.ir.line_map maps each `.llir` line to its Python line
with it.
"""

from __future__ import annotations

import re

from irscope.ir.llvm_ir import SourceLine

# !7 = !DILocation(line: 13, column: 24, scope: !4)
# !9 = distinct !DILexicalBlockFile(scope: !4, file: !10, discriminator: 0)
_DEBUG_NODE = re.compile(
    r"\n!(?P<id>\d+) = (?:distinct )?!(?P<kind>DILocation|DIFile|DISubprogram|DILexicalBlockFile|DILexicalBlock)"
    r"\((?P<fields>[^\n]*)\)(?=\n|$)")
# line: 13    scope: !4    filename: "vector_add.py"
# \b: a key starts a word; without it every position of a 20,000-letter word retried `\w+: ` (2 s).
_DEBUG_FIELD = re.compile(r'\b(?P<key>\w+): (?:!(?P<ref>\d+)|"(?P<text>(?:[^"\\]|\\.)*)"|(?P<int>-?\d+))')


def debug_info(text: str) -> "_DebugInfo":
    """The debug metadata of an LLVM IR text, for resolving `!dbg !N` to source lines."""
    text = "\n" + text
    start = text.find("\n!")
    return _DebugInfo(text, len(text) if start < 0 else start)


class _DebugInfo:
    """`!dbg !N` -> SourceLine, following DILocation scopes to their DIFile, resolved on demand."""

    def __init__(self, text: str, start: int) -> None:
        self.nodes = {int(m["id"]): (m["kind"], m["fields"]) for m in _DEBUG_NODE.finditer(text, start)}
        self.fields: dict[int, dict[str, str | int]] = {}
        self.cache: dict[int, SourceLine | None] = {}

    def location(self, ref: int | None) -> SourceLine | None:
        if ref is None:
            return None
        if ref not in self.cache:
            frames, seen = [], set()
            cur: int | None = ref
            while cur is not None and cur not in seen:  # a DILocation, then its inlinedAt chain outwards
                seen.add(cur)
                node = self._node(cur, "DILocation")
                if node is None:
                    break
                frames.append(SourceLine(self._file(node.get("scope")), _number(node, "line"), _number(node, "column")))
                cur = _number(node, "inlinedAt") or None
            self.cache[ref] = SourceLine.from_frames(frames) if frames else None
        return self.cache[ref]

    def _node(self, ref, kind: str | None = None) -> dict | None:
        """The node's fields: `!N` refs and numbers as ints, strings as str; None if absent or another kind."""
        if ref not in self.nodes or (kind is not None and self.nodes[ref][0] != kind):
            return None
        if ref not in self.fields:
            self.fields[ref] = {m["key"]: int(m["ref"] or m["int"]) if m["text"] is None else m["text"]
                                for m in _DEBUG_FIELD.finditer(self.nodes[ref][1])}
        return self.fields[ref]

    def _file(self, scope) -> str:
        seen = set()
        while scope not in seen and (node := self._node(scope)) is not None:
            seen.add(scope)
            if self.nodes[scope][0] == "DIFile":
                name, directory = str(node.get("filename", "")), str(node.get("directory", ""))
                return name if name.startswith("/") or not directory else f"{directory.rstrip('/')}/{name}"
            scope = node.get("file", node.get("scope"))  # a DISubprogram or lexical block names its file
        return "?"


def _number(node: dict, key: str) -> int:
    value = node.get(key, 0)
    return value if isinstance(value, int) else 0  # a quoted value where a number belongs
