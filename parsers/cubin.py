"""Registers, local memory and static shared memory from a CUDA cubin (ELF64).

Read straight from the ELF so a copied cache can be analyzed with no CUDA toolkit
and no triton installed. The figures are the ones `cuobjdump --dump-resource-usage`
prints (tests check each against it):
- REG: the `EIATTR_REGCOUNT` attribute in `.nv.info` for the kernel's symbol
  (also the top byte of the `.text.<kernel>` section's sh_info);
- STACK: `EIATTR_MAX_STACK_SIZE`, else `EIATTR_MIN_STACK_SIZE`, else `EIATTR_FRAME_SIZE`
  (the per-thread stack frame: where current ptxas puts register spills);
- LOCAL: the size of `.nv.local.<kernel>` (statically allocated local memory; 0 when absent);
- SHARED: the size of `.nv.shared.<kernel>` (plus `.nv.shared.reserved.0`, empty so far).
  On sm_90 and later the first 1 KiB of that section is the per-block reserve that the
  driver adds on its own: the driver reports SHARED_SIZE_BYTES without it, and counting it
  as static would charge it twice (tests/data/nvidia_occupancy_h100.csv shows both).
- barriers: `EIATTR_NUM_BARRIERS` in `.nv.info.<kernel>` (CUDA 13 ELF), else bits 20-26 of
  the `.text.<kernel>` section flags (older ELF); the sm_90+ occupancy limit reads it.
- arch: the SM number in the ELF header's e_flags (low byte, or the next one from ELF ABI 8).

`.nv.info` sections are lists of attributes: one byte format, one byte attribute id,
then a 2-byte value (formats NVAL 0x01, BVAL 0x02, HVAL 0x03) or a 2-byte size and
that many bytes (SVAL 0x04).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

from irscope.model.kernel import Fact, Origin
from irscope.model.errors import ArtifactError

EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIATTR_NUM_BARRIERS = 0x4C
_EIFMT_BVAL = 0x02
_EIFMT_SVAL = 0x04
SM90_RESERVED_SHARED = 1024
_SHT_NOBITS = 8


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    info: int
    flags: int = 0


def parse_cubin(data: bytes, path: str, kernel_name: str) -> dict[str, Fact[int]]:
    """Facts keyed `registers`, `local_bytes`, `stack_bytes`, `static_shared`, `reserved_shared`,
    `barriers` and `sm` (the SM number the cubin was built for)."""
    sections = _sections(data, path)
    by_name = {s.name: s for s in sections}
    symbol = _symbol_index(data, sections, kernel_name, path)

    found: dict[str, Fact[int]] = {}

    def put(key: str, value: int, detail: str) -> None:
        found.setdefault(key, Fact(value, Origin(path, None, detail)))

    attrs = _function_attributes(data, by_name.get(".nv.info"), symbol, path) if symbol is not None else {}
    if EIATTR_REGCOUNT in attrs:
        put("registers", attrs[EIATTR_REGCOUNT], ".nv.info EIATTR_REGCOUNT")
    text = by_name.get(f".text.{kernel_name}")
    if text is not None and text.info >> 24:
        put("registers", text.info >> 24, f".text.{kernel_name} sh_info")
    for attr, name in ((EIATTR_MAX_STACK_SIZE, "MAX_STACK_SIZE"), (EIATTR_MIN_STACK_SIZE, "MIN_STACK_SIZE"),
                       (EIATTR_FRAME_SIZE, "FRAME_SIZE")):
        if attr in attrs:
            put("stack_bytes", attrs[attr], f".nv.info EIATTR_{name}")
    local = by_name.get(f".nv.local.{kernel_name}")
    put("local_bytes", local.size if local else 0, f"section .nv.local.{kernel_name} size")
    sm = _sm_of(data)
    if sm:
        put("sm", sm, "ELF header e_flags (SM arch)")
    shared = by_name.get(f".nv.shared.{kernel_name}")
    size = shared.size if shared else 0
    if sm >= 90 and size >= SM90_RESERVED_SHARED:
        put("reserved_shared", SM90_RESERVED_SHARED,
            f"first 1 KiB of section .nv.shared.{kernel_name} (sm_90+ reserve)")
        put("static_shared", size - SM90_RESERVED_SHARED,
            f"section .nv.shared.{kernel_name} size {size} less the 1 KiB reserve")
    else:
        put("static_shared", size, f"section .nv.shared.{kernel_name} size")
    reserved = by_name.get(".nv.shared.reserved.0")
    if reserved is not None and reserved.size:
        put("reserved_shared", reserved.size, "section .nv.shared.reserved.0 size")
    barriers = _kernel_attribute(data, by_name.get(f".nv.info.{kernel_name}"), EIATTR_NUM_BARRIERS, path)
    if barriers is not None:
        put("barriers", barriers, f".nv.info.{kernel_name} EIATTR_NUM_BARRIERS")
    elif text is not None:
        put("barriers", (text.flags >> 20) & 0x7F, f"section .text.{kernel_name} flags bits 20-26")
    if "registers" not in found:
        raise ArtifactError(path, f"no register count for kernel {kernel_name!r} in this cubin")
    return found


def _sections(data: bytes, path: str) -> list[_Section]:
    if data[:4] != b"\x7fELF":
        raise ArtifactError(path, "not an ELF file (cubin expected)")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise ArtifactError(path, "not a 64-bit little-endian ELF (cubin expected)")
    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        strtab = raw[shstrndx]
    except (struct.error, IndexError):
        raise ArtifactError(path, "truncated ELF: section headers out of range") from None
    names_off = strtab[4]
    sections = []
    for name_off, type_, flags, _addr, offset, size, _link, info, _align, _entsize in raw:
        end = data.find(b"\0", names_off + name_off)
        name = data[names_off + name_off:end].decode("latin-1")
        if type_ != _SHT_NOBITS and offset + size > len(data):
            raise ArtifactError(path, f"truncated ELF: section {name} ends past the file")
        sections.append(_Section(name, type_, offset, size, info, flags))
    return sections


def _symbol_index(data: bytes, sections: list[_Section], name: str, path: str) -> int | None:
    symtab = next((s for s in sections if s.name == ".symtab"), None)
    strtab = next((s for s in sections if s.name == ".strtab"), None)
    if symtab is None or strtab is None:
        return None
    wanted = name.encode()
    for i in range(symtab.size // 24):
        st_name, = struct.unpack_from("<I", data, symtab.offset + i * 24)
        start = strtab.offset + st_name
        if data[start:start + len(wanted) + 1] == wanted + b"\0":
            return i
    return None


def _records(data: bytes, info: _Section | None, path: str) -> Iterator[tuple[int, int, int, int]]:
    """(format, attribute, payload offset, value) of each `.nv.info*` record; for SVAL the value
    is the payload's size, for the other formats the 2-byte value itself."""
    if info is None:
        return
    pos, end = info.offset, info.offset + info.size
    while pos + 4 <= end:
        fmt, attr, value = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if fmt == _EIFMT_SVAL and pos + value > end:
            raise ArtifactError(path, f"{info.name} attribute 0x{attr:02x} runs past its section")
        yield fmt, attr, pos, value
        if fmt == _EIFMT_SVAL:
            pos += value


def _function_attributes(data: bytes, info: _Section | None, symbol: int, path: str) -> dict[int, int]:
    """Attributes of `.nv.info` whose SVAL payload is (symbol index, u32 value) for `symbol`."""
    attrs: dict[int, int] = {}
    for fmt, attr, pos, size in _records(data, info, path):
        if fmt == _EIFMT_SVAL and size == 8:
            sym, payload = struct.unpack_from("<II", data, pos)
            if sym == symbol:
                attrs.setdefault(attr, payload)
    return attrs


def _sm_of(data: bytes) -> int:
    """The SM number in e_flags: bits 0-7 up to ELF ABI version 7, bits 8-15 from version 8."""
    flags, = struct.unpack_from("<I", data, 0x30)
    return (flags >> 8) & 0xFF if data[8] >= 8 else flags & 0xFF


def _kernel_attribute(data: bytes, info: _Section | None, wanted: int, path: str) -> int | None:
    """A BVAL attribute's 2-byte value from a kernel's own `.nv.info.<kernel>` section."""
    return next((value for fmt, attr, _, value in _records(data, info, path)
                 if fmt == _EIFMT_BVAL and attr == wanted), None)
