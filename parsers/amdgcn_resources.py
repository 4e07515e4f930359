"""Register, scratch and LDS figures from an `.amdgcn` file, each with its line.

Three places in the file carry them, and not every Triton version writes all three:
- the `amdhsa.kernels` YAML between `.amdgpu_metadata` and `.end_amdgpu_metadata`
  (all versions; the code-object metadata the loader itself reads, so preferred);
- the `; Kernel info:` comment block (3.2+; absent in 3.0);
- `.set <kernel>.num_vgpr, N` symbols (3.2+);
- the kernel descriptor's `.amdhsa_next_free_vgpr`, the VGPRs the hardware allocates (all versions).
Only the lines that carry a figure are looked at, with one regex over the whole file.
"""

from __future__ import annotations

import re

from irscope.model.kernel import AmdResources, Fact, Origin
from irscope.model.errors import ArtifactError
from irscope.parsers.lines import LineIndex

_FIGURES = re.compile(
    r"""
    # ; TotalNumVgprs: 12        ; codeLenInByte = 712      ; Occupancy: 8
    ^[ \t]*;[ \t]*(?P<ckey>codeLenInByte|TotalNumSgprs|NumVgprs|NumAgprs|TotalNumVgprs
                          |ScratchSize|Occupancy)[ \t]*[:=][ \t]*(?P<cval>\d+)
    #   .amdhsa_next_free_vgpr 169        (the kernel descriptor: what the hardware allocates)
    |^[ \t]*\.amdhsa_(?P<dkey>next_free_vgpr)[ \t]+(?P<dval>\d+)
    #   .set add_kernel.num_vgpr, 12      (.set .Ladd_kernel.num_vgpr, 12 in some LLVMs)
    |^[ \t]*\.set[ \t]+(?:\.L)?(?P<sname>[^\s,]+)\.(?P<skey>num_vgpr|num_agpr),[ \t]*(?P<sval>\d+)
    #   - .agpr_count:     0          (first key of a kernel entry in the YAML list)
    #     .vgpr_count:     12         (the entry's other top-level keys; .args are deeper)
    |^(?P<yitem>[ ]{2}-[ ]|[ ]{4})\.(?P<ykey>name|vgpr_count|agpr_count|sgpr_count
                          |vgpr_spill_count|sgpr_spill_count|private_segment_fixed_size
                          |group_segment_fixed_size|wavefront_size|max_flat_workgroup_size)
        :[ \t]+(?P<yval>\S+)
    """,
    re.M | re.X,
)

_METADATA_START = re.compile(r"^[ \t]*\.amdgpu_metadata\b", re.M)

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
    lines = LineIndex(text)
    meta = _METADATA_START.search(text)
    yaml_from = meta.start() if meta else len(text)

    comments: dict[str, Fact[int]] = {}
    sets: dict[str, Fact[int]] = {}
    entries: list[dict[str, Fact[str]]] = []
    for m in _FIGURES.finditer(text):
        if m["ckey"]:
            comments.setdefault(m["ckey"], _fact(int(m["cval"]), path, lines, m, f"; {m['ckey']}"))
        elif m["dkey"]:
            comments.setdefault(m["dkey"], _fact(int(m["dval"]), path, lines, m, f".amdhsa_{m['dkey']}"))
        elif m["skey"]:
            if kernel_name is None or m["sname"] == kernel_name:
                sets.setdefault(m["skey"], _fact(int(m["sval"]), path, lines, m, f".set {m['skey']}"))
        elif m.start() > yaml_from:
            if m["yitem"] == "  - " or not entries:
                entries.append({})
            entries[-1].setdefault(m["ykey"], _fact(m["yval"], path, lines, m, f".{m['ykey']}"))

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


def _fact(value, path: str, lines: LineIndex, m: re.Match, detail: str) -> Fact:
    return Fact(value, Origin(path, lines.line_of(m.start()), detail))


def _as_int(fact: Fact[str], path: str) -> Fact[int]:
    try:
        return Fact(int(fact.value, 0), fact.origin)
    except ValueError:
        message = f"{fact.origin.detail} is not an integer: {fact.value!r:.40}"
        raise ArtifactError(path, message, fact.origin.line) from None
