"""Register, scratch and LDS figures from an `.amdgcn` file, each with its line.

Three places in the file carry them, and not every Triton version writes all three:
- the `amdhsa.kernels` YAML between `.amdgpu_metadata` and `.end_amdgpu_metadata`
  (all versions; the code-object metadata the loader itself reads, so preferred);
- the `; Kernel info:` comment block (3.2+; absent in 3.0);
- `.set <kernel>.num_vgpr, N` symbols (3.2+);
- the kernel descriptor's `.amdhsa_next_free_vgpr`, the VGPRs the hardware allocates (all versions).
Only the lines that carry a figure are looked at, with a few regexes over the whole file.
"""

from __future__ import annotations

import re

from irscope.model.kernel import AmdResources, Fact, Origin
from irscope.model.errors import ArtifactError

# Each figure's pattern leads with a literal (`;`, `.amdhsa_next_free_vgpr`, `.set`), so the regex
# engine jumps from one occurrence to the next instead of trying a `^` alternation at every
# character; a match counts only where it is the first non-blank of its line (`_at_line_start`).
# ; TotalNumVgprs: 12        ; codeLenInByte = 712      ; Occupancy: 8
_COMMENT = re.compile(r";[ \t]*(codeLenInByte|TotalNumSgprs|NumVgprs|NumAgprs|TotalNumVgprs|ScratchSize|Occupancy)"
                      r"[ \t]*[:=][ \t]*(\d+)")
#   .amdhsa_next_free_vgpr 169        (the kernel descriptor: what the hardware allocates)
_DESCRIPTOR = re.compile(r"\.amdhsa_(next_free_vgpr)[ \t]+(\d+)")
#   .set add_kernel.num_vgpr, 12      (.set .Ladd_kernel.num_vgpr, 12 in some LLVMs)
_SET = re.compile(r"\.set[ \t]+(?:\.L)?([^\s,]+)\.(num_vgpr|num_agpr),[ \t]*(\d+)")
#   - .agpr_count:     0          (first key of a kernel entry in the YAML list)
#     .vgpr_count:     12         (the entry's other top-level keys; .args are deeper)
# (led by the newline before the line: the entry's line starts at group 1)
_YAML = re.compile(
    r"\n([ ]{2}-[ ]|[ ]{4})\.(name|vgpr_count|agpr_count|sgpr_count|vgpr_spill_count|sgpr_spill_count"
    r"|private_segment_fixed_size|group_segment_fixed_size|wavefront_size|max_flat_workgroup_size):[ \t]+(\S+)")

_METADATA_START = re.compile(r"\.amdgpu_metadata\b")


def _at_line_start(text: str, m: re.Match) -> bool:
    """Whether only blanks come before the match on its line (the `^[ \t]*` the figures need)."""
    start = m.start()
    return not text[text.rfind("\n", 0, start) + 1:start].strip(" \t")


class _Lines:
    """1-based line numbers of ascending offsets, counting the newlines between one and the next."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line = text, 0, 1

    def of(self, offset: int) -> int:
        if offset < self.offset:  # not ascending: count from the start
            self.offset, self.line = 0, 1
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


# AmdResources field <- (YAML key, comment key) in order of preference.
_FIELDS = {
    "vgpr_total": ("vgpr_count", "TotalNumVgprs"),
    "agpr": ("agpr_count", "NumAgprs"),
    "sgpr": ("sgpr_count", "TotalNumSgprs"),
    "vgpr_spill": ("vgpr_spill_count", None),
    "sgpr_spill": ("sgpr_spill_count", None),
    "scratch_bytes": ("private_segment_fixed_size", "ScratchSize"),
    "lds_static": ("group_segment_fixed_size", None),
    "wavefront_size": ("wavefront_size", None),
    "max_flat_workgroup_size": ("max_flat_workgroup_size", None),
    "llvm_occupancy": (None, "Occupancy"),
    "code_bytes": (None, "codeLenInByte"),
    "vgpr_arch": (None, "NumVgprs"),
    "vgpr_allocated": (None, "next_free_vgpr"),
}


def parse_amd_resources(text: str, path: str, kernel_name: str | None = None) -> AmdResources:
    meta = next((m for m in _METADATA_START.finditer(text) if _at_line_start(text, m)), None)
    yaml_from = text.rfind("\n", 0, meta.start()) + 1 if meta else len(text)  # where its line starts

    comments: dict[str, Fact[int]] = {}
    sets: dict[str, Fact[int]] = {}
    entries: list[dict[str, Fact[str]]] = []
    lines = _Lines(text)
    found = [m for m in _COMMENT.finditer(text) if _at_line_start(text, m)]
    found += [m for m in _DESCRIPTOR.finditer(text) if _at_line_start(text, m)]
    for m in sorted(found, key=re.Match.start):  # one kind each: first seen wins, as in file order
        key = m[1]
        detail = f"; {key}" if m.re is _COMMENT else f".amdhsa_{key}"
        comments.setdefault(key, _fact(int(m[2]), path, lines, m, detail))
    for m in _SET.finditer(text):
        if _at_line_start(text, m) and (kernel_name is None or m[1] == kernel_name):
            sets.setdefault(m[2], _fact(int(m[3]), path, lines, m, f".set {m[2]}"))
    for m in _YAML.finditer(text, yaml_from):  # the lines that start after yaml_from
        if m[1] == "  - " or not entries:
            entries.append({})
        entries[-1].setdefault(m[2], _fact(m[3], path, lines, m, f".{m[2]}"))

    entry = _pick_entry(entries, kernel_name)
    values: dict[str, Fact[int]] = {}
    for field, (ykey, ckey) in _FIELDS.items():
        if ykey and ykey in entry:
            values[field] = _as_int(entry[ykey], path)
        elif ckey and ckey in comments:
            values[field] = comments[ckey]
    # 3.0 writes no comments: the `.set` symbols, or for a kernel with no AGPRs the
    # unified total, give the architectural VGPR count.
    if "vgpr_arch" not in values:
        if "num_vgpr" in sets:
            values["vgpr_arch"] = sets["num_vgpr"]
        elif "agpr" in values and values["agpr"].value == 0 and "vgpr_total" in values:
            values["vgpr_arch"] = values["vgpr_total"]
    if "agpr" not in values and "num_agpr" in sets:
        values["agpr"] = sets["num_agpr"]
    if not values:
        raise ArtifactError(path, "no register figures found (no amdhsa.kernels metadata and no '; Kernel info' block)")
    return AmdResources(**values)


def _pick_entry(entries: list[dict[str, Fact[str]]], name: str | None) -> dict[str, Fact[str]]:
    if name is not None:
        for entry in entries:
            if "name" in entry and entry["name"].value == name:
                return entry
    return entries[0] if entries else {}


def _fact(value, path: str, lines: _Lines, m: re.Match, detail: str) -> Fact:
    return Fact(value, Origin(path, lines.of(m.start(1) if m.re is _YAML else m.start()), detail))


def _as_int(fact: Fact[str], path: str) -> Fact[int]:
    try:
        return Fact(int(fact.value, 0), fact.origin)
    except ValueError:
        message = f"{fact.origin.detail} is not an integer: {fact.value!r:.40}"
        raise ArtifactError(path, message, fact.origin.line) from None
