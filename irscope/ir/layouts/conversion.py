"""How a `ttg.convert_layout` between two register layouts moves its data, per Triton version.

Triton decides this in `cvtNeedsSharedMemory` (`lib/Analysis/Utility.cpp`), which the shared
memory allocator of both backends calls; a conversion that needs it gets an LDS / shared-memory
scratch buffer. From the two linear layouts it computes the map from destination to source
hardware index and divides out the dims that stay put (`minimalCvtLayout`): what is left says
whether the data stays in each thread, crosses lanes of a warp, or crosses warps.

What each Triton version does with that (checked in the Triton git history; the release branch
points were matched by the blobs of each PyPI wheel's Python sources):
- 3.0, 3.1 (branched from main about 2024-06-01): every conversion goes through shared memory,
  except the MMA/MFMA-to-dot-operand and Hopper MMA-to-MMA shortcuts.
- 3.2 (about 2024-10-24): also stays in registers when the linear layouts say so
  (`cvtReordersRegisters`, #4125) and for blocked-to-FMA-operand; no warp-shuffle lowering yet.
- 3.3, 3.4 (2025-02-28 and about 2025-06-15): warp shuffles for data that only crosses lanes
  (#5419, 2025-01-15), when a cost heuristic agrees (element width, vector width, selects).
- 3.5 and later (about 2025-08-20): warp shuffles whenever the move needs fewer than two
  register<->lane bit swaps (#7558, 2025-07-19), otherwise shared memory.

Not yet modelled: a source that every warp holds whole (its warp bits broadcast). Triton 3.9 moves
xformers' split-K combine store convert (a 1-D slice, 128 bf16) with lane shuffles
(`ds_bpermute_b32`, `shfl.sync.idx`, no barrier), but fla's 16-row `#mma` -> `#blocked` store convert
through shared memory (`stmatrix` / `bar.sync` / `ldmatrix`). This port says shared memory for both
(two false IRS302 infos in the real-world ledger); a per-warp rule that fixed the first broke the second.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

from irscope.ir.layouts.encodings import AmdMfma, Blocked, DotOperand, Layout, NvidiaMma, Slice
from irscope.ir.layouts.linear import LinearLayout, minimal_conversion
from irscope.ir.layouts.to_linear import to_linear

KINDS = ("noop", "registers", "warp_shuffle", "shared_memory", "unknown")
_KIND_WORDS = {"noop": "no data movement", "registers": "registers", "warp_shuffle": "warp shuffles",
               "shared_memory": "shared memory", "unknown": "an undetermined path"}


@dataclass(frozen=True)
class Conversion:
    kind: str  # one of KINDS
    reason: str  # one sentence for users


def classify_conversion(src: Layout, dst: Layout, shape: tuple[int, ...], triton_version: str | None,
                        element_type: str | None = None) -> Conversion:
    """How Triton lowers `convert_layout` from `src` to `dst` for a tensor of `shape`.

    `triton_version` is "3.6.0", a range from the dialect prefix ("<3.3", ">=3.3") or None;
    where versions differ and the version is not known, the answer is 'unknown'.
    `element_type` (`f16`, `bf16`, `f8E4M3FN`, ...) is needed by some older shortcuts only.
    """
    # A family's configs convert the same layouts again and again: cached by value (frozen encodings).
    try:
        return _cached_classification(src, dst, tuple(shape), triton_version, element_type)
    except TypeError:  # an unhashable parameter kept as parsed
        return _classify(src, dst, tuple(shape), triton_version, element_type)


@lru_cache(maxsize=4096)
def _cached_classification(src: Layout, dst: Layout, shape: tuple[int, ...], triton_version: str | None,
                           element_type: str | None) -> Conversion:
    return _classify(src, dst, shape, triton_version, element_type)


def _classify(src: Layout, dst: Layout, shape: tuple[int, ...], triton_version: str | None,
              element_type: str | None) -> Conversion:
    if src == dst:
        return Conversion("noop", "Source and destination layouts are the same.")
    for side in (src, dst):
        if not getattr(side, "known", False):
            return Conversion("unknown", f"irscope does not model the {side.name} layout.")
    if src.is_shared or dst.is_shared:
        return Conversion("shared_memory", "One side is a shared-memory encoding, so the data is in shared memory.")
    if not (src.is_distributed and dst.is_distributed):
        return Conversion("unknown", "One side is not a register layout.")
    eras = _eras_for(triton_version)
    if not eras:
        return Conversion("unknown", f"irscope models Triton 3.0 and later, not {triton_version}.")
    facts = _Facts(src, dst, tuple(shape), element_type)
    results = [(era, era.rule(facts)) for era in eras]
    kinds = {c.kind for _, c in results}
    if len({c.reason for _, c in results}) == 1:
        return results[0][1]
    if len(kinds) == 1:  # the versions agree, for reasons of their own
        neutral = [c for _, c in results if "Triton" not in c.reason]
        if neutral or results[0][1].kind == "unknown":
            return (neutral or [results[-1][1]])[-1]
        kind = results[0][1].kind
        return Conversion(kind, f"Triton {_span(eras[0], eras[-1])} use {_KIND_WORDS[kind]} for this conversion.")
    runs: list[list] = []  # [first era, last era, kind] of consecutive eras that agree
    for era, c in results:
        if runs and runs[-1][2] == c.kind:
            runs[-1][1] = era
        else:
            runs.append([era, era, c.kind])
    spelled = ", ".join(f"{_span(first, last)} use {_KIND_WORDS[kind]}" for first, last, kind in runs)
    return Conversion("unknown", f"Depends on the Triton version, which is not known here: {spelled}.")


# -- what the layouts say -----------------------------------------------------------------------


class _Facts:
    """The two layouts and what their linear layouts say, computed once and on demand."""

    def __init__(self, src: Layout, dst: Layout, shape: tuple[int, ...], element_type: str | None) -> None:
        self.src, self.dst, self.shape = src, dst, shape
        # A type irscope cannot read ("None", "index") counts as not known.
        self.element_type = element_type if _element_bits(element_type) is not None else None

    @cached_property
    def src_ll(self) -> LinearLayout | None:
        return to_linear(self.src, self.shape)

    @cached_property
    def dst_ll(self) -> LinearLayout | None:
        return to_linear(self.dst, self.shape)

    def movement(self, injective: bool) -> str | None:
        """'none', 'registers', 'lanes', 'warps', 'blocks', or None when it cannot be told."""
        return _movement(self.src_ll, self.dst_ll, injective)

    def no_ll(self) -> Conversion:
        dims = "x".join(map(str, self.shape))
        if self.src_ll is not None and self.dst_ll is not None:
            return Conversion("unknown", f"irscope could not match the elements of the two layouts on a {dims} tensor.")
        missing = self.src if self.src_ll is None else self.dst
        return Conversion("unknown", f"irscope has no linear layout for {missing.summary()} on a {dims} tensor.")

    @cached_property
    def bits(self) -> int | None:
        return _element_bits(self.element_type)


def _movement(src: LinearLayout | None, dst: LinearLayout | None, injective: bool) -> str | None:
    if src is None or dst is None:
        return None
    if src == dst:
        return "none"
    try:
        outs = minimal_conversion(src, dst, injective).out_names
    except ValueError:
        return None
    if not outs:
        return "none"
    if "block" in outs:
        return "blocks"
    if "warp" in outs:
        return "warps"
    return {("register",): "registers", ("register", "lane"): "lanes"}.get(tuple(outs))


_MOVED = {
    "none": Conversion("noop", "Both layouts put every element in the same register of the same thread."),
    "registers": Conversion("registers", "Every element stays in its thread; only registers are renumbered."),
    "warps": Conversion("shared_memory", "Data moves between warps, so it goes through shared memory."),
    "blocks": Conversion("shared_memory", "Data moves between CTAs of a cluster (distributed shared memory)."),
}


# -- the rules of each Triton version -----------------------------------------------------------


def _rule_30(f: _Facts) -> Conversion:
    hit = _first_shortcut(f, (_mfma_to_dot, _mma_to_dot_30, _mma_to_mma_30))
    if hit is not None:
        return hit
    return Conversion("shared_memory", "Triton 3.0-3.1 convert between register layouts through shared memory, "
                                       "except for the MMA-to-operand shortcuts.")


def _rule_32(f: _Facts) -> Conversion:
    hit = _first_shortcut(f, (_mfma_to_dot, _mma_to_dot_32, _blocked_to_dot))
    if hit is not None:
        return hit
    if not (_has_ll_in_32(f.src) and _has_ll_in_32(f.dst)):
        return Conversion("shared_memory", "Triton 3.2 has no linear layout for this dot operand, "
                                           "so the conversion goes through shared memory.")
    moved = f.movement(injective=True)
    if moved is None:
        return f.no_ll()
    if moved in ("none", "registers") and (isinstance(f.src, Slice) or isinstance(f.dst, Slice)):
        # 3.2 padded slice layouts with zero registers to match its legacy element count, and
        # its solver paired such broadcast bits up in order; irscope does not rebuild that.
        return Conversion("unknown", "Triton 3.2 pads slice layouts with extra registers; irscope cannot "
                                     "tell whether this conversion stays in registers there.")
    if moved == "lanes":
        return Conversion("shared_memory", "Data moves between lanes of a warp; Triton 3.2 has no "
                                           "warp-shuffle lowering, so it goes through shared memory.")
    return _MOVED[moved]


def _rule_33(f: _Facts) -> Conversion:
    moved = f.movement(injective=False)
    if moved in ("none", "registers"):
        return _MOVED[moved]
    hit = _first_shortcut(f, (_mfma_fp8_shuffle, _mma_v3_fp8_shuffle))
    if hit is not None:
        return hit
    if moved is None:
        return f.no_ll()
    if moved != "lanes":
        return _MOVED[moved]
    if not _one_shuffle_possible(f):
        return Conversion("shared_memory", "Data moves between lanes in a pattern one cheap index shuffle "
                                           "cannot do, so Triton 3.3-3.4 use shared memory.")
    return Conversion("unknown", "Data moves only between lanes of a warp; Triton 3.3-3.4 pick warp shuffles or "
                                 "shared memory by a cost heuristic (element and vector width) irscope does not model.")


def _rule_35(f: _Facts) -> Conversion:
    moved = f.movement(injective=False)
    if moved is None:
        return f.no_ll()
    if moved != "lanes":
        return _MOVED[moved]
    swaps = _mixed_transpositions(f.src_ll, f.dst_ll)
    if swaps is None:
        return Conversion("unknown", "Data moves only between lanes, in a pattern irscope cannot decompose.")
    if swaps < 2:
        return Conversion("warp_shuffle", "Data moves only between lanes of a warp; Triton 3.5+ uses warp shuffles.")
    return Conversion("shared_memory", f"Data moves between lanes but needs {swaps} register-lane swaps; "
                                       "Triton 3.5+ uses shared memory from 2 on.")


@dataclass(frozen=True)
class _Era:
    """Triton versions first..last (inclusive) that share one rule."""

    first: tuple[int, int]
    last: tuple[int, int] | None  # None: still the rule in the newest version checked (3.9)
    rule: Callable[[_Facts], Conversion]


_ERAS = (
    _Era((3, 0), (3, 1), _rule_30),
    _Era((3, 2), (3, 2), _rule_32),
    _Era((3, 3), (3, 4), _rule_33),
    _Era((3, 5), None, _rule_35),
)


def _span(first: _Era, last: _Era) -> str:
    start = "{}.{}".format(*first.first)
    if last.last is None:
        return f"{start} and later"
    end = "{}.{}".format(*last.last)
    return start if start == end else f"{start}-{end}"

# "3.6.0", "3.9.0+gitabc"; "<3.3" / ">=3.3" from the dialect prefix
_VERSION = re.compile(r"^\s*(?P<op><|>=)?\s*(?P<major>\d+)\.(?P<minor>\d+)")


def _eras_for(version: str | None) -> tuple[_Era, ...]:
    m = _VERSION.match(version or "")
    if m is None:
        return _ERAS
    v = (int(m["major"]), int(m["minor"]))
    if m["op"] == "<":
        return tuple(e for e in _ERAS if e.first < v)
    if m["op"] == ">=":
        return tuple(e for e in _ERAS if e.last is None or e.last >= v)
    return tuple(e for e in _ERAS if e.first <= v and (e.last is None or v <= e.last))


# -- shortcuts that some versions special-case --------------------------------------------------
# Each returns a Conversion when it applies, None when it does not, and raises _NeedsType when
# only the element type (not given) could tell.


class _NeedsType(Exception):
    pass


def _first_shortcut(f: _Facts, checks) -> Conversion | None:
    for check in checks:
        try:
            hit = check(f)
        except _NeedsType:
            return Conversion("unknown", "This version's shortcut for this conversion depends on the element type, "
                                         "which is not known here.")
        if hit is not None:
            return hit
    return None


def _mfma_dot_pair(f: _Facts) -> tuple[AmdMfma, DotOperand] | None:
    if isinstance(f.src, AmdMfma) and isinstance(f.dst, DotOperand) and f.dst.parent == f.src \
            and f.dst.op_idx == 0 and f.src.is_transposed and f.src.warps_per_cta[1:2] == (1,) \
            and (f.src.m_dim, f.src.n_dim) in ((32, 32), (16, 16)):
        return f.src, f.dst
    return None


def _mfma_to_dot(f: _Facts) -> Conversion | None:
    """isMfmaToDotShortcut (<= 3.2): transposed f16/bf16 MFMA results feed operand A as they are."""
    pair = _mfma_dot_pair(f)
    # kWidth must equal the MFMA's contiguous elements per thread along dim 1 (4 in 2-D).
    if pair is None or pair[1].k_width != (4 if len(pair[0].warps_per_cta) == 2 else 1):
        return None
    if f.element_type is None:
        raise _NeedsType
    if f.element_type in ("f16", "bf16"):
        return Conversion("registers", "The MFMA result already has the operand-A layout (MFMA-to-dot shortcut).")
    return None


def _mfma_fp8_shuffle(f: _Facts) -> Conversion | None:
    """matchMFMAAndDotOperandShuffleCase (3.3-3.4): fp8 results to operand A with kWidth 8."""
    if _mfma_dot_pair(f) is None or f.dst.k_width != 8:  # type: ignore[union-attr]
        return None
    if f.element_type is None:
        raise _NeedsType
    if f.element_type.startswith("f8"):
        return Conversion("warp_shuffle", "fp8 MFMA results are shuffled into the operand-A layout (AMD shortcut).")
    return None


def _mma_to_dot_30(f: _Facts) -> Conversion | None:
    return _mma_to_dot(f, v3_ok=lambda mma, parent: _both_wgmma_one_column(parent, mma))


def _mma_to_dot_32(f: _Facts) -> Conversion | None:
    def v3_ok(mma: NvidiaMma, parent: Layout) -> bool:
        if parent == mma:
            return True
        return _movement(to_linear(parent, f.shape), f.src_ll, injective=True) in ("none", "registers")
    return _mma_to_dot(f, v3_ok)


def _mma_to_dot(f: _Facts, v3_ok) -> Conversion | None:
    """isMmaToDotShortcut (<= 3.2): an MMA accumulator reused as operand A without moving data."""
    src, dst = f.src, f.dst
    if not (isinstance(src, NvidiaMma) and isinstance(dst, DotOperand) and dst.op_idx == 0
            and src.warps_per_cta[1:2] == (1,)):
        return None
    if src.version_major == 2 and dst.parent == src:
        if f.bits is None:
            raise _NeedsType
        ok = f.element_type != "f32"
    elif src.version_major == 3 and v3_ok(src, dst.parent):
        if f.bits is None:
            raise _NeedsType
        ok = f.bits in (8, 16)
    else:
        return None
    return Conversion("registers", "The MMA accumulator already has the operand-A layout (MMA-to-dot shortcut).") \
        if ok else None


def _both_wgmma_one_column(a: Layout, b: Layout) -> bool:
    return all(isinstance(x, NvidiaMma) and x.version_major == 3 and x.warps_per_cta[1:2] == (1,) for x in (a, b))


def _mma_to_mma_30(f: _Facts) -> Conversion | None:
    if _both_wgmma_one_column(f.src, f.dst):
        return Conversion("registers", "Hopper MMA to MMA with one warp column is a register shortcut (3.0-3.1).")
    return None


def _mma_v3_fp8_shuffle(f: _Facts) -> Conversion | None:
    """matchMmaV3AndDotOperandLayout (3.3-3.4): 8-bit wgmma accumulators to operand A, kWidth 4."""
    src, dst = f.src, f.dst
    if not (isinstance(src, NvidiaMma) and src.version_major == 3 and isinstance(dst, DotOperand)
            and dst.op_idx == 0 and src.warps_per_cta[1:2] == (1,) and dst.k_width == 4):
        return None
    if dst.parent != src and _movement(to_linear(dst.parent, f.shape), f.src_ll, False) not in ("none", "registers"):
        return None
    if f.bits is None:
        raise _NeedsType
    if f.bits == 8:
        return Conversion("warp_shuffle", "8-bit Hopper MMA results are shuffled into the operand-A layout.")
    return None


def _blocked_to_dot(f: _Facts) -> Conversion | None:
    """isBlockedToDotShortcut (3.2): each thread already holds whole K rows of the FMA operand."""
    src, dst, shape = f.src, f.dst, f.shape
    if not (isinstance(src, Blocked) and isinstance(dst, DotOperand) and isinstance(dst.parent, Blocked)):
        return None
    parent, rank = dst.parent, len(shape)
    if rank not in (2, 3) or src.rank != rank or parent.rank != rank:
        return None
    k = rank - 1 if dst.op_idx == 0 else rank - 2
    dims = [rank - 2 if dst.op_idx == 0 else rank - 1] + ([0] if rank == 3 else [])
    split = src.cta_layout.cta_split_num[k] if src.cta_layout else 1
    same = split == 1 and src.cta_layout == parent.cta_layout and src.order == parent.order \
        and src.size_per_thread[k] == shape[k] \
        and all(getattr(src, a)[d] == getattr(parent, a)[d]
                for a in ("size_per_thread", "threads_per_warp", "warps_per_cta") for d in dims)
    return Conversion("registers", "Each thread already holds whole K rows of the FMA operand.") if same else None


def _has_ll_in_32(layout: Layout) -> bool:
    """Triton 3.2 had linear layouts for dot operands of MFMA and of Ampere with kWidth 8 only."""
    if isinstance(layout, Slice):
        return _has_ll_in_32(layout.parent)
    if isinstance(layout, DotOperand):
        parent = layout.parent
        return isinstance(parent, AmdMfma) or (
            isinstance(parent, NvidiaMma) and parent.version_major == 2 and layout.k_width == 8)
    return True


# -- lane-only moves: can one shuffle do it? ----------------------------------------------------


def _one_shuffle_possible(f: _Facts) -> bool:
    """The structural checks of the 3.3-3.4 getWarpLayoutConvertDecomposition: no destination
    lane may be a plain copy of another (lane broadcast); a lane bit that picks a source
    register needs a register bit that picks a source lane; and at most one lane bit may pick
    registers, since each one doubles the selects and more than one select is slower than
    shared memory."""
    try:
        comp = minimal_conversion(f.src_ll, f.dst_ll)  # type: ignore[arg-type]
    except ValueError:
        return True
    c = comp.sublayout(["register", "lane"], ["register", "lane"])
    reg, lane = c.out_names.index("register"), c.out_names.index("lane")
    missing = 0
    for basis in c.basis("lane"):
        if basis[reg]:
            missing += 1
        elif not basis[lane]:
            return False
    donors = sum(1 for basis in c.basis("register") if basis[lane])
    return donors >= missing and missing <= 1


def _mixed_transpositions(src: LinearLayout | None, dst: LinearLayout | None) -> int | None:
    """How many register<->lane bit swaps the 3.5+ getWarpLayoutConvertDecomposition factors
    out of the permutation that carries source bits to destination bits; None if the layouts
    are not plain bit permutations."""
    if src is None or dst is None:
        return None
    s = src.with_bases("register", [b for b in src.basis("register") if any(b)])
    t = dst.with_bases("register", [b for b in dst.basis("register") if any(b)])
    if not (s.is_subpermutation() and t.is_subpermutation()):
        return None
    n = {d: max(len(s.basis(d)), len(t.basis(d))) for d in ("register", "lane")}

    def bits(layout: LinearLayout) -> dict[tuple[str, int], int]:
        values = {}
        for d in ("register", "lane"):
            own = [layout.flat(b, src) for b in layout.basis(d)]
            for i in range(n[d]):
                values[(d, i)] = own[i] if i < len(own) else 0
        return values

    sv, tv = bits(s), bits(t)
    where = {v: pos for pos, v in tv.items() if v}
    perm: dict[tuple[str, int], tuple[str, int]] = {}
    src_free, dst_free = [], []
    for pos in sv:  # registers first, then lanes, as Triton walks them
        a, b = sv[pos], tv[pos]
        if a:
            if a not in where:
                return None  # the bit lives in another warp: not a lane-only move
            perm[pos] = where[a]
        if not a and not b:
            perm[pos] = pos  # both broadcast here: a fixed point
        elif not a:
            src_free.append(pos)
        elif not b:
            dst_free.append(pos)
    # Source bits that hold nothing new go to destination bits that hold nothing new, in order.
    for a_pos, b_pos in zip(src_free, dst_free):
        perm[a_pos] = b_pos
    if len(perm) != len(sv) or len(set(perm.values())) != len(perm):
        return None
    return sum(1 for (d, _), (e, _) in perm.items() if d == "register" and e == "lane")


def _element_bits(element_type: str | None) -> int | None:
    if element_type is None:
        return None
    if element_type.startswith("!tt.ptr"):
        return 64
    m = re.match(r"^(?:bf|f|i|u|si|ui)(\d+)", element_type)
    return int(m.group(1)) if m else None
