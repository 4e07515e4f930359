"""What an AMDGCN mnemonic is: its kind, memory width, wait counters and MFMA shape.

The names follow LLVM's AMDGPU assembler for gfx9 (gfx90a, gfx942, gfx950), with the
gfx11/gfx12 spellings (`global_load_b128`, `ds_load_b64`, `s_wait_loadcnt`) accepted
too. Widths are bytes per lane: `dwordx4` and `b128` are 16, `ushort` and `u16` are 2.
Classification is by mnemonic alone and cached: a kernel uses a few hundred distinct
mnemonics over thousands of lines.
"""

from __future__ import annotations

import re
from functools import lru_cache

from irscope.isa import model as isa
from irscope.isa.model import MatrixOp, MemoryAccess, Wait

_WIDTHS = {
    "byte": 1, "ubyte": 1, "sbyte": 1, "u8": 1, "i8": 1, "b8": 1,
    "short": 2, "ushort": 2, "sshort": 2, "u16": 2, "i16": 2, "b16": 2,
    "dword": 4, "b32": 4, "dwordx2": 8, "b64": 8, "dwordx3": 12, "b96": 12, "dwordx4": 16, "b128": 16,
    "dwordx8": 32, "b256": 32, "dwordx16": 64, "b512": 64,  # scalar loads only
}
_SIGNED = frozenset({"sbyte", "sshort", "i8", "i16"})
_FORMAT_WIDTHS = {"x": 4, "xy": 8, "xyz": 12, "xyzw": 16}
_VMEM = {"global": "global", "buffer": "buffer", "flat": "flat", "scratch": "scratch", "tbuffer": "buffer"}
_LOAD_KIND = {"global": isa.GLOBAL_LOAD, "buffer": isa.GLOBAL_LOAD, "flat": isa.GLOBAL_LOAD,
              "scratch": isa.LOCAL_LOAD, "tbuffer": isa.GLOBAL_LOAD}
_STORE_KIND = {"global": isa.GLOBAL_STORE, "buffer": isa.GLOBAL_STORE, "flat": isa.GLOBAL_STORE,
               "scratch": isa.LOCAL_STORE, "tbuffer": isa.GLOBAL_STORE}
# LDS instructions that are not memory traffic: lane permutes through the LDS crossbar,
# GWS, append/consume. They still count in lgkmcnt (see counters_of).
_DS_PAIRS = {"read2": "read", "write2": "write", "read2st64": "read", "write2st64": "write"}
_DS_NOT_MEMORY = ("ds_swizzle", "ds_permute", "ds_bpermute", "ds_gws", "ds_append", "ds_consume", "ds_nop")
# Opcodes that end or redirect control flow. s_trap is not one: the 3.2 kernarg-preload
# header starts with `s_trap 2` and execution continues past it on hardware that preloads.
BRANCHES = frozenset({"s_branch", "s_setpc_b64", "s_endpgm", "s_endpgm_saved", "s_endpgm_ordered_ps_done"})
_WAITS = frozenset({
    "s_waitcnt", "s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_expcnt", "s_waitcnt_lgkmcnt",
    "s_wait_loadcnt", "s_wait_storecnt", "s_wait_samplecnt", "s_wait_bvhcnt", "s_wait_expcnt",
    "s_wait_dscnt", "s_wait_kmcnt", "s_wait_loadcnt_dscnt", "s_wait_storecnt_dscnt",
})
_BARRIERS = frozenset({"s_barrier", "s_barrier_signal", "s_barrier_signal_isfirst", "s_barrier_wait",
                       "s_barrier_init", "s_barrier_join", "s_barrier_leave"})
_MATRIX = re.compile(
    r"^v_(?P<family>mfma|smfmac|wmma|swmmac)_(?:scale_)?(?P<out>[a-z0-9]+?)_"
    r"(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)(?:_?(?P<blocks>\d+)b)?_?(?P<inp>\w*)$"
)
KNOWN_PREFIXES = ("s_", "v_", "ds_", "global_", "buffer_", "flat_", "scratch_", "tbuffer_", "image_", "exp")


@lru_cache(maxsize=4096)
def classify(mnemonic: str) -> tuple[str, MemoryAccess | None, MatrixOp | None]:
    """(kind, memory access, matrix op) of a mnemonic; kind OTHER for what no rule needs."""
    prefix, _, rest = mnemonic.partition("_")
    if prefix in _VMEM:
        return _vmem(prefix, rest)
    if prefix == "ds":
        return _lds(mnemonic, rest)
    if mnemonic in _WAITS:
        return isa.WAIT, None, None
    if mnemonic in _BARRIERS:
        return isa.BARRIER, None, None
    if mnemonic in BRANCHES or mnemonic.startswith("s_cbranch_"):
        return isa.BRANCH, None, None
    if mnemonic.startswith(("s_load_", "s_buffer_load_", "s_scratch_load_")):
        width = _width(rest.split("_")[1:])
        return isa.SCALAR_LOAD, MemoryAccess("smem", width), None
    if prefix == "v" and (m := _MATRIX.match(mnemonic)):
        return isa.MATRIX, None, _matrix(m)
    if prefix == "s":
        return isa.SCALAR_ALU, None, None
    if prefix == "v":
        return isa.VECTOR_ALU, None, None
    return isa.OTHER, None, None


def _vmem(prefix: str, rest: str) -> tuple[str, MemoryAccess | None, MatrixOp | None]:
    op, _, suffix = rest.partition("_")
    parts = suffix.split("_")
    space = _VMEM[prefix]
    if op == "load" and parts[0] == "lds":  # global_load_lds_dwordx4: global -> LDS, no VGPR result
        return isa.ASYNC_COPY, MemoryAccess(space, _width(parts[1:]), to_lds=True), None
    if op == "load" or op == "store":
        if parts[0] == "format":
            width = _FORMAT_WIDTHS.get(parts[-1])
            if width and "d16" in parts:
                width //= 2
        else:
            width = _width(parts)
        signed = any(p in _SIGNED for p in parts)
        kind = (_LOAD_KIND if op == "load" else _STORE_KIND)[prefix]
        return kind, MemoryAccess(space, width, signed=signed), None
    if op == "atomic":
        kind = isa.LOCAL_STORE if prefix == "scratch" else isa.GLOBAL_ATOMIC
        return kind, MemoryAccess(space, _atomic_width(parts)), None
    return isa.OTHER, None, None  # buffer_wbl2, buffer_inv, buffer_gl0_inv: cache maintenance


def _lds(mnemonic: str, rest: str) -> tuple[str, MemoryAccess | None, MatrixOp | None]:
    if mnemonic.startswith(_DS_NOT_MEMORY):
        return isa.OTHER, None, None
    op, _, suffix = rest.partition("_")
    parts = suffix.split("_")
    accesses = 1
    if op in _DS_PAIRS:  # ds_read2_b64, ds_write2st64_b64: two accesses of the stated width
        accesses, op = 2, _DS_PAIRS[op]
    elif parts[0] == "2addr":  # gfx11+: ds_load_2addr_b32, ds_store_2addr_stride64_b64
        accesses = 2
    width = _width(parts)
    signed = any(p in _SIGNED for p in parts)
    if op in ("read", "load"):
        return isa.SHARED_LOAD, MemoryAccess("lds", width, accesses, signed), None
    if op in ("write", "store"):
        return isa.SHARED_STORE, MemoryAccess("lds", width, accesses), None
    return isa.SHARED_ATOMIC, MemoryAccess("lds", _atomic_width([op, *parts])), None


def _width(parts) -> int | None:
    for part in parts:
        if part in _WIDTHS:
            return _WIDTHS[part]
    return None


def _atomic_width(parts: list[str]) -> int:
    if "x2" in parts or any(p in ("f64", "u64", "i64", "b64") for p in parts):
        return 8
    return 4  # 32-bit atomics, and pk_add_f16/bf16 (two halves in one dword)


def _matrix(m: re.Match) -> MatrixOp:
    inp = m["inp"] or None
    return MatrixOp(family=m["family"], m=int(m["m"]), n=int(m["n"]), k=int(m["k"]), out_type=m["out"],
                    in_type=inp, blocks=int(m["blocks"]) if m["blocks"] else 1)


# ---- wait counters -------------------------------------------------------------------

_COUNTER_ARG = re.compile(r"(vmcnt|expcnt|lgkmcnt|vscnt)(?:_sat)?\((\d+)\)")
# gfx12 combined waits: loadcnt/storecnt in bits 13:8, dscnt in bits 5:0 (LLVM AMDGPUBaseInfo).
_COMBINED = {"s_wait_loadcnt_dscnt": "loadcnt", "s_wait_storecnt_dscnt": "storecnt"}


def parse_wait(mnemonic: str, args: tuple[str, ...], arch: str | None) -> Wait | None:
    """The counters of a wait instruction; None when the operand cannot be read."""
    if mnemonic == "s_waitcnt":
        named = _COUNTER_ARG.findall(" ".join(args))
        if named:
            return Wait(tuple((name, int(value)) for name, value in named))
        value = _int(args[0]) if args else None
        return None if value is None else Wait(_decode_waitcnt(value, arch))
    imm = _int(args[-1]) if args else None
    if imm is None:
        return None
    if mnemonic in _COMBINED:
        return Wait(((_COMBINED[mnemonic], (imm >> 8) & 0x3F), ("dscnt", imm & 0x3F)))
    if mnemonic.startswith("s_waitcnt_"):  # s_waitcnt_vscnt null, 0x0
        return Wait(((mnemonic[len("s_waitcnt_"):], imm),))
    return Wait(((mnemonic[len("s_wait_"):], imm),))  # s_wait_loadcnt 0x0


def _decode_waitcnt(value: int, arch: str | None) -> tuple[tuple[str, int], ...]:
    """A raw `s_waitcnt 0x...` immediate, per the encodings in LLVM's AMDGPU docs."""
    major = _major(arch)
    if major >= 11:
        return (("vmcnt", value >> 10 & 0x3F), ("expcnt", value & 0x7), ("lgkmcnt", value >> 4 & 0x3F))
    lgkm = value >> 8 & (0x3F if major == 10 else 0xF)
    return (("vmcnt", (value & 0xF) | (value >> 14 & 0x3) << 4), ("expcnt", value >> 4 & 0x7), ("lgkmcnt", lgkm))


def counter_limits(arch: str | None) -> dict[str, int]:
    """The largest value each counter can hold: outstanding operations beyond it stall issue."""
    major = _major(arch)
    if major >= 12:
        return {"loadcnt": 63, "storecnt": 63, "samplecnt": 63, "bvhcnt": 7, "dscnt": 63, "kmcnt": 31, "expcnt": 7}
    if major >= 10:
        return {"vmcnt": 63, "vscnt": 63, "lgkmcnt": 63, "expcnt": 7}
    return {"vmcnt": 63, "lgkmcnt": 15, "expcnt": 7}


def counters_of(mnemonic: str, kind: str, args: tuple[str, ...], arch: str | None) -> tuple[str, ...]:
    """The wait counters an instruction increments when issued (in issue order per counter)."""
    major = _major(arch)
    if mnemonic.startswith("ds_") and not mnemonic.startswith("ds_nop"):
        return ("dscnt",) if major >= 12 else ("lgkmcnt",)
    if kind == isa.SCALAR_LOAD or mnemonic.startswith(("s_memtime", "s_memrealtime", "s_sendmsg")):
        return ("kmcnt",) if major >= 12 else ("lgkmcnt",)
    vmem = mnemonic.startswith(("global_", "buffer_", "flat_", "scratch_", "tbuffer_", "image_"))
    if not vmem or kind == isa.OTHER:
        return ()
    stores = kind in (isa.GLOBAL_STORE, isa.LOCAL_STORE) or (
        kind == isa.GLOBAL_ATOMIC and not returns_value(args))
    counters: tuple[str, ...]
    if major >= 12:
        counters = ("storecnt",) if stores else ("loadcnt",)
    elif major >= 10:
        counters = ("vscnt",) if stores else ("vmcnt",)
    else:
        counters = ("vmcnt",)  # gfx9 has no store counter: stores count in vmcnt
    if mnemonic.startswith("flat_"):  # flat may hit LDS, so it counts in both
        counters += ("dscnt",) if major >= 12 else ("lgkmcnt",)
    return counters


def returns_value(args: tuple[str, ...]) -> bool:
    """An atomic returns the old value when asked: glc (gfx9 < 940), sc0 (gfx940+), th:*RETURN (gfx12)."""
    return any(a in ("glc", "sc0") or a.endswith("RETURN") for a in args)


def _major(arch: str | None) -> int:
    """gfx942 -> 9, gfx1100 -> 11: the major version is every digit but the last two."""
    digits = arch[3:] if arch and arch.startswith("gfx") else ""
    if len(digits) >= 3 and digits[:-2].isdigit():
        return int(digits[:-2])
    return 9


def _int(token: str) -> int | None:
    try:
        return int(token, 0)
    except ValueError:
        return None


# ---- operands ------------------------------------------------------------------------

_REGISTER = re.compile(r"^(?P<file>v|a|s|ttmp)(?:(?P<one>\d+)|\[(?P<lo>\d+):(?P<hi>\d+)\])$")
_REGISTER_KINDS = {"v": "vgpr", "a": "agpr", "s": "sgpr", "ttmp": "ttmp"}
_SPECIALS = frozenset({
    "vcc", "vcc_lo", "vcc_hi", "exec", "exec_lo", "exec_hi", "m0", "scc", "off", "null", "flat_scratch",
    "flat_scratch_lo", "flat_scratch_hi", "xnack_mask", "lds_direct", "src_scc", "src_execz", "src_vccz",
    "src_shared_base", "src_shared_limit", "src_private_base", "src_private_limit", "src_pops_exiting_wave_id",
})
_MODIFIERS = frozenset({
    "glc", "slc", "dlc", "nt", "sc0", "sc1", "lds", "offen", "idxen", "addr64", "gds", "tfe", "lwe", "d16",
    "clamp", "high", "done", "vm", "compr", "unorm", "da", "a16", "r128", "noalloc", "swz", "scc",
})
_LITERAL = re.compile(r"^-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:e[-+]?\d+)?)$")
# -v[0:1], |v1|, abs(v1), neg(v1), sext(v1): a source modifier around a register.
_WRAPPED = re.compile(r"^(?:-|\||(?:abs|neg|sext)\()+(?P<reg>[^|()]+)[|)]*$")


@lru_cache(maxsize=16384)
def operand(token: str) -> isa.Operand:
    """Type one operand token as LLVM prints it: v[4:7], a0, s[2:3], vcc, 0x7f, offset:16, .LBB0_3."""
    m = _REGISTER.match(token)
    if m:
        first = int(m["one"] if m["one"] is not None else m["lo"])
        count = 1 if m["one"] is not None else int(m["hi"]) - first + 1
        return isa.Operand(_REGISTER_KINDS[m["file"]], token, first, count)
    if token in _SPECIALS:
        return isa.Operand("special", token)
    if _LITERAL.match(token):
        return isa.Operand("literal", token)
    name, colon, _value = token.partition(":")
    if colon and name.replace("_", "").isalnum():
        return isa.Operand("modifier", token, name=name)
    if token in _MODIFIERS:
        return isa.Operand("modifier", token, name=token)
    if token.startswith(".L"):
        return isa.Operand("label", token)
    wrapped = _WRAPPED.match(token)
    if wrapped and _REGISTER.match(wrapped["reg"]):
        inner = operand(wrapped["reg"])
        return isa.Operand(inner.kind, token, inner.first, inner.count)
    return isa.Operand("other", token)
