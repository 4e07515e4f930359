"""Inline call chains from the DWARF `.debug_info` that PTX carries as `.b8` data.

Triton 3.0 and 3.2 print no inline chain after `.loc`, so an instruction inlined from
Triton's library (`tl.cdiv` in standard.py) would map to the library line. The chain is
in the debug sections as DW_TAG_inlined_subroutine entries whose low/high pc are
`$L__tmp` labels; this reads just enough DWARF to get (range, call site) pairs.
"""

from __future__ import annotations

import re

DWARF_SECTIONS = frozenset({".debug_abbrev", ".debug_info"})
# .b8 29    .b32 .debug_abbrev    .b64 $L__tmp1    (3.2 adds `// DW_TAG_inlined_subroutine` comments)
_DATA_ITEM = re.compile(r"\.b(8|16|32|64)\s+([^/]*)")
# DW_FORM code -> size in bytes (DW_FORM_addr takes the unit's address size)
_FIXED_FORMS = {0x01: 8, 0x05: 2, 0x06: 4, 0x07: 8, 0x0B: 1, 0x0C: 1, 0x0E: 4, 0x10: 4, 0x11: 1, 0x12: 2,
                0x13: 4, 0x14: 8, 0x17: 4, 0x19: 0}


def inlined_ranges(abbrev: list[str], info: list[str]) -> list[tuple[str, str, tuple[int, int, int], int]]:
    """DW_TAG_inlined_subroutine DIEs: (low_pc label, high_pc label, (call file, line, column), depth)."""
    try:
        return _read_inlined(_dwarf_cells(abbrev), _dwarf_cells(info))
    except (IndexError, KeyError, TypeError, ValueError):
        return []  # an unexpected form or a cut file: the .loc lines alone still hold


def _dwarf_cells(lines: list[str]) -> list:
    """Section bytes, little-endian; a label operand (`.b64 $L__tmp1`) stays one (label, size) cell."""
    cells: list = []
    for s in lines:
        m = _DATA_ITEM.match(s)
        if m is None:
            continue
        size = int(m[1]) // 8
        for v in m[2].split(","):
            v = v.strip()
            if v[:1].isdigit() or v[:1] == "-":
                n = int(v, 0) & ((1 << 8 * size) - 1)
                cells.extend((n >> 8 * i) & 0xFF for i in range(size))
            elif v:
                cells.append((v, size))
    return cells


def _uleb(cells: list, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = cells[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _read_inlined(ab: list, info: list) -> list[tuple[str, str, tuple[int, int, int], int]]:
    abbrevs = {}
    pos = 0
    while pos < len(ab):
        code, pos = _uleb(ab, pos)
        if code == 0:
            break
        tag, pos = _uleb(ab, pos)
        children = ab[pos]
        pos += 1
        attrs = []
        while True:
            attr, pos = _uleb(ab, pos)
            form, pos = _uleb(ab, pos)
            if attr == 0 and form == 0:
                break
            attrs.append((attr, form))
        abbrevs[code] = (tag, children, attrs)

    def fixed(pos: int, n: int) -> tuple[object, int]:
        if isinstance(info[pos], tuple):
            return info[pos][0], pos + 1
        return sum(info[pos + i] << 8 * i for i in range(n)), pos + n

    _, pos = fixed(0, 4)  # unit length
    _, pos = fixed(pos, 2)  # DWARF version
    _, pos = fixed(pos, 4)  # abbrev offset (the label .debug_abbrev)
    address_size = info[pos]
    pos += 1
    found, depth = [], 0
    while pos < len(info):
        code, pos = _uleb(info, pos)
        if code == 0:  # end of a DIE's children
            depth -= 1
            continue
        tag, children, attrs = abbrevs[code]
        values: dict[int, object] = {}
        for attr, form in attrs:
            if form == 0x16:  # DW_FORM_indirect
                form, pos = _uleb(info, pos)
            value: object = None
            if form in _FIXED_FORMS:
                value, pos = fixed(pos, address_size if form == 0x01 else _FIXED_FORMS[form])
            elif form == 0x08:  # DW_FORM_string
                pos = info.index(0, pos) + 1
            elif form in (0x0D, 0x0F, 0x15):  # sdata, udata, ref_udata
                value, pos = _uleb(info, pos)
            elif form in (0x09, 0x18):  # block, exprloc
                n, pos = _uleb(info, pos)
                pos += n
            elif form in (0x03, 0x04, 0x0A):  # block2, block4, block1
                n, pos = fixed(pos, {0x03: 2, 0x04: 4, 0x0A: 1}[form])
                pos += int(n)  # type: ignore[call-overload]
            else:
                raise ValueError(f"DW_FORM {form:#x}")
            values[attr] = value
        low, high = values.get(0x11), values.get(0x12)
        if tag == 0x1D and isinstance(low, str) and isinstance(high, str):  # DW_TAG_inlined_subroutine
            site = (values.get(0x58), values.get(0x59), values.get(0x57))  # call_file, call_line, call_column
            found.append((low, high, tuple(int(v) if isinstance(v, int) else 0 for v in site), depth))
        if children:
            depth += 1
    return found
