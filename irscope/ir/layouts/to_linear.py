"""Each register layout as a linear layout, following Triton 3.9's definitions
(`lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp`, `LinearEncodingAttr::toLinearLayout`).

Out dims are named `dim0, dim1, ...`; in dims are `register, lane, warp, block`. The order in
which a layout lists its out dims matters while it is being built: when the tensor is larger
than one layout tile, registers repeat along the first (most minor) out dim first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from irscope.ir.layouts.encodings import (
    AmdMfma,
    Blocked,
    CtaLayout,
    DotOperand,
    Layout,
    Linear,
    NvidiaMma,
    Slice,
)
from irscope.ir.layouts.linear import LinearLayout, ensure_not_larger, ensure_not_smaller

_WAVE64 = 64  # MFMA is wave64 only


def to_linear(layout: object, shape: Sequence[int]) -> LinearLayout | None:
    """The linear layout of a register layout for a tensor of `shape`, or None where irscope
    does not model it (shared encodings, WMMA, non-power-of-two shapes, unknown parameters)."""
    return layout_to_linear(layout, tuple(shape))


def layout_to_linear(layout: object, shape: tuple[int, ...]) -> LinearLayout | None:
    # A family's configs and a kernel's ops ask for the same few layouts again and again. Encodings
    # are frozen dataclasses compared by value, so the cache is keyed by the whole layout and shape.
    try:
        return _cached_layout_to_linear(layout, shape)
    except TypeError:  # unhashable (a parameter irscope keeps as parsed): compute it each time
        return _layout_to_linear(layout, shape)


@lru_cache(maxsize=4096)
def _cached_layout_to_linear(layout: object, shape: tuple[int, ...]) -> LinearLayout | None:
    return _layout_to_linear(layout, shape)


def _layout_to_linear(layout: object, shape: tuple[int, ...]) -> LinearLayout | None:
    if not shape or any(not _pow2(s) for s in shape):
        return None
    if getattr(layout, "extras", ()):
        return None  # a parameter irscope does not know may change the mapping
    try:
        if isinstance(layout, Blocked):
            return _blocked(layout, shape)
        if isinstance(layout, Linear):
            return _linear(layout, shape)
        if isinstance(layout, Slice):
            return _slice(layout, shape)
        if isinstance(layout, AmdMfma):
            return _mfma(layout, shape)
        if isinstance(layout, NvidiaMma):
            return _nvidia_mma(layout, shape)
        if isinstance(layout, DotOperand):
            return _dot_operand(layout, shape)
    except (ValueError, KeyError, IndexError, ZeroDivisionError):
        return None  # parameters that do not fit the shape: Triton would reject them too
    return None


# -- helpers shared by the layouts ------------------------------------------------------------


def _dims(rank: int) -> tuple[str, ...]:
    return tuple(f"dim{i}" for i in range(rank))


def _identity(size: int, in_dim: str, out_dim: str) -> LinearLayout:
    return LinearLayout.identity1d(size, in_dim, out_dim)


def _standard_nd(in_dim: str, shape: Sequence[int], order: Sequence[int]) -> LinearLayout:
    """`shape` elements laid out over `in_dim`, fastest along order[0] (identityStandardND)."""
    return _cached_standard_nd(in_dim, tuple(shape), tuple(order))


@lru_cache(maxsize=1024)  # the same few warp and lane grids recur in every layout of every config
def _cached_standard_nd(in_dim: str, shape: tuple[int, ...], order: tuple[int, ...]) -> LinearLayout:
    names = _dims(len(shape))
    result = LinearLayout.empty()
    for dim in order:
        result = result * _identity(shape[dim], in_dim, names[dim])
    return result


def _broadcast_k(in_dim: str, shape: Sequence[int], order: Sequence[int], k_dim: int) -> LinearLayout:
    """Like _standard_nd, but every bit along `k_dim` maps to 0: dot operands are replicated
    over the warps (or lanes) that split the K dimension of the result."""
    names = _dims(len(shape))
    result = LinearLayout.empty()
    for dim in order:
        part = LinearLayout.zeros1d(shape[dim], in_dim, names[dim]) if dim == k_dim \
            else _identity(shape[dim], in_dim, names[dim])
        result = result * part
    return result


def _matrix_order(rank: int, row_major: bool) -> list[int]:
    order = list(range(rank - 1, -1, -1))
    if not row_major and rank >= 2:
        order[0], order[1] = order[1], order[0]
    return order


def _operand_order(op_idx: int, rank: int) -> list[int]:
    """K fastest: A is [*, M, K] -> [1, 0]; B is [*, K, N] -> [0, 1] (getOrderForDotOperand)."""
    return _matrix_order(rank, row_major=op_idx == 0)


def _cga(cta: CtaLayout | None, rank: int) -> LinearLayout:
    """Which part of the tensor each CTA of a cluster holds (makeCgaLayout)."""
    try:
        return _cached_cga(cta, rank)
    except TypeError:  # a CTA layout built with lists (not by the parser): not cacheable
        return _make_cga(cta, rank)


@lru_cache(maxsize=256)  # nearly always None (one CTA) or one cluster shape per kernel
def _cached_cga(cta: CtaLayout | None, rank: int) -> LinearLayout:
    return _make_cga(cta, rank)


def _make_cga(cta: CtaLayout | None, rank: int) -> LinearLayout:
    ctas = cta.ctas_per_cga if cta else (1,) * rank
    split = cta.cta_split_num if cta else (1,) * rank
    order = cta.cta_order if cta else tuple(range(rank - 1, -1, -1))
    if len(ctas) != rank or len(split) != rank or len(order) != rank:
        raise ValueError("CTA layout rank differs from the tensor rank")
    names = _dims(rank)
    result = LinearLayout.empty()
    for dim in order:
        result = result * _identity(split[dim], "block", names[dim]) \
            * LinearLayout.zeros1d(ctas[dim] // split[dim], "block", names[dim])
    return result.transpose_outs(names)


def _fit(cta_layout: LinearLayout, cta: CtaLayout | None, shape: tuple[int, ...]) -> LinearLayout:
    """Repeat or cut one CTA's layout to the tensor shape, then add the cluster (combineCtaCgaWithShape)."""
    names = _dims(len(shape))
    labeled = dict(zip(names, shape))
    cga = ensure_not_larger(_cga(cta, len(shape)), labeled).transpose_outs(cta_layout.out_names)
    cta_shape = {d: max(1, labeled[d] // cga.out_size(d)) for d in cta_layout.out_names}
    fitted = ensure_not_larger(ensure_not_smaller(cta_layout, cta_shape), cta_shape)
    return (fitted * cga).transpose_outs(names)


def _pow2(n: object) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def _need_pow2(*groups: Sequence[int]) -> None:
    for group in groups:
        if not all(_pow2(v) for v in group):
            raise ValueError("layout parameters must be powers of two")


# -- blocked, linear, slice -------------------------------------------------------------------


def _blocked(b: Blocked, shape: tuple[int, ...]) -> LinearLayout:
    if b.rank != len(shape):
        raise ValueError("rank mismatch")
    cta = _blocked_cta(tuple(b.size_per_thread), tuple(b.threads_per_warp), tuple(b.warps_per_cta), tuple(b.order))
    return _fit(cta, b.cta_layout, shape)


@lru_cache(maxsize=1024)  # one CTA's tile of a blocked layout: the same for every shape it is used with
def _blocked_cta(size_per_thread: tuple[int, ...], threads_per_warp: tuple[int, ...], warps_per_cta: tuple[int, ...],
                 order: tuple[int, ...]) -> LinearLayout:
    _need_pow2(size_per_thread, threads_per_warp, warps_per_cta)
    return _standard_nd("register", size_per_thread, order) \
        * _standard_nd("lane", threads_per_warp, order) \
        * _standard_nd("warp", warps_per_cta, order)


def _linear(lin: Linear, shape: tuple[int, ...]) -> LinearLayout:
    rank = len(shape)
    names = _dims(rank)
    groups = (("register", lin.register), ("lane", lin.lane), ("warp", lin.warp), ("block", lin.block))
    if any(len(b) != rank for _, bases in groups for b in bases):
        raise ValueError("rank mismatch")
    # Out sizes as Triton infers them: the next power of two above every basis value.
    sizes = [1] * rank
    for _, bases in groups:
        for basis in bases:
            sizes = [max(s, 1 << v.bit_length()) for s, v in zip(sizes, basis)]
    layout = LinearLayout(tuple((name, tuple(bases)) for name, bases in groups), tuple(zip(names, sizes)))
    # Repeat along dims in the order registers first move along (LinearEncodingAttr::getOrder).
    order: list[int] = []
    for basis in lin.register:
        first = next((i for i, v in enumerate(basis) if v), None)
        if first is not None and first not in order:
            order.append(first)
    order += [d for d in range(rank - 1, -1, -1) if d not in order]
    target = {names[d]: shape[d] for d in range(rank)}
    permuted = layout.transpose_outs([names[d] for d in order])
    fitted = ensure_not_larger(ensure_not_smaller(permuted, target), target, broadcast_registers=False)
    return fitted.transpose_outs(names)


def _slice(s: Slice, shape: tuple[int, ...]) -> LinearLayout | None:
    if s.dim > len(shape):
        raise ValueError("slice dim beyond the rank")
    parent = layout_to_linear(s.parent, shape[:s.dim] + (1,) + shape[s.dim:])
    if parent is None:
        return None
    # The parent has size 1 along `dim`, so dropping that coordinate loses nothing; registers
    # that then hold nothing new are removed (lanes and warps keep them: they broadcast).
    dropped = tuple(
        (name, tuple(b[:s.dim] + b[s.dim + 1:] for b in bases)) for name, bases in parent.bases)
    out_dims = tuple((f"dim{i}", size) for i, size in enumerate(shape))
    layout = LinearLayout(dropped, out_dims)
    return layout.with_bases("register", [b for b in layout.basis("register") if any(b)])


# -- AMD MFMA -----------------------------------------------------------------------------------


def _mfma_tile_ok(m: AmdMfma, rank: int) -> bool:
    return len(m.warps_per_cta) == rank and rank in (2, 3) and (m.m_dim, m.n_dim) in ((32, 32), (16, 16))


def _mfma(m: AmdMfma, shape: tuple[int, ...]) -> LinearLayout | None:
    """Each lane holds `height` consecutive elements along M (along N when transposed); 32x32
    tiles put lanes 0-31 along N and lanes 32-63 four rows further down M."""
    rank = len(shape)
    if not _mfma_tile_ok(m, rank):
        return None
    _need_pow2(m.warps_per_cta, m.tiles_per_warp or ())
    names = _dims(rank)
    dim_m, dim_n = names[rank - 2], names[rank - 1]
    m_dim, n_dim = m.m_dim, m.n_dim
    height = 1 if m.element_bit_width == 64 else 4
    tiles = m_dim * n_dim // (_WAVE64 * height)
    if not m.is_transposed:
        tile = _identity(height, "register", dim_m) \
            * (_identity(n_dim, "lane", dim_n) * _identity(_WAVE64 // n_dim, "lane", dim_m))
        tile = tile * _identity(tiles, "register", dim_m)
    else:
        tile = _identity(height, "register", dim_n) \
            * (_identity(m_dim, "lane", dim_m) * _identity(_WAVE64 // m_dim, "lane", dim_n))
        tile = tile * _identity(tiles, "register", dim_n)
    tile = tile.transpose_outs([dim_n, dim_m])
    tiles_per_warp = m.tiles_per_warp or (1,) * rank
    warps = m.warps_per_cta
    # Tiles run along N across the whole tensor first, then along M (the dot lowering assumes it).
    tile = tile * _identity(tiles_per_warp[rank - 1], "register", dim_n)
    tile = tile * _identity(warps[rank - 1], "warp", dim_n)
    tile = tile * _identity(shape[rank - 1] // (n_dim * warps[rank - 1] * tiles_per_warp[rank - 1]), "register", dim_n)
    tile = tile * _identity(tiles_per_warp[rank - 2], "register", dim_m)
    tile = tile * _identity(warps[rank - 2], "warp", dim_m)
    if rank == 3:
        tile = tile * _identity(1, "register", names[0]) * _identity(1, "lane", names[0]) \
            * _identity(warps[0], "warp", names[0])
    return _fit(tile, m.cta_layout, shape)


def _mfma_operand(dot: DotOperand, m: AmdMfma, shape: tuple[int, ...]) -> LinearLayout | None:
    """A lane holds k_width consecutive K elements; lanes run along M (or N) first, then K."""
    rank = len(shape)
    if not _mfma_tile_ok(m, rank) or dot.k_width is None or not _pow2(dot.k_width):
        return None
    _need_pow2(m.warps_per_cta, m.tiles_per_warp or ())
    names = _dims(rank)
    a = dot.op_idx == 0
    non_k = m.m_dim if a else m.n_dim
    k_index, non_k_index = (rank - 1, rank - 2) if a else (rank - 2, rank - 1)
    order = _operand_order(dot.op_idx, rank)
    dim_k, dim_non_k = names[order[0]], names[order[1]]
    tile = _identity(dot.k_width, "register", dim_k) \
        * (_identity(non_k, "lane", dim_non_k) * _identity(_WAVE64 // non_k, "lane", dim_k))
    k_tile = _WAVE64 // non_k * dot.k_width
    if shape[k_index] > k_tile:
        tile = tile * _identity(shape[k_index] // k_tile, "register", dim_k)
    tiles_per_warp = m.tiles_per_warp or (1,) * rank
    tile = tile * _identity(tiles_per_warp[non_k_index], "register", dim_non_k)
    tile = tile.transpose_outs([dim_k, dim_non_k])
    if rank == 3:
        tile = tile * _identity(1, "register", names[order[2]]) * _identity(1, "lane", names[order[2]])
    # Warps as in the result; their copies along K are cut off by the shape (broadcast).
    warps = _standard_nd("warp", m.warps_per_cta, _matrix_order(rank, row_major=True))
    return _fit(tile * warps, m.cta_layout, shape)


# -- NVIDIA MMA ---------------------------------------------------------------------------------


def _mma_tile(tile_shape: Sequence[int], k_width: int, order: Sequence[int], rep_order: Sequence[int]
              ) -> LinearLayout:
    """The mma.sync fragment: k_width registers and 4 lanes along the inner dim, 8 lanes along
    the outer dim, then register repeats (nvidiaMmaTile)."""
    rank = len(rep_order)
    names = _dims(rank)
    inner, outer = order[0], order[1]
    m, n = tile_shape[outer], tile_shape[inner]
    if m % 8 or n % (k_width * 4):
        raise ValueError("MMA tile does not fit the fragment")
    return _standard_nd("register", [1] * rank, rep_order) \
        * _identity(k_width, "register", names[inner]) \
        * _identity(4, "lane", names[inner]) \
        * _identity(8, "lane", names[outer]) \
        * _identity(m // 8, "register", names[outer]) \
        * _identity(n // (k_width * 4), "register", names[inner])


def _nvidia_mma(mma: NvidiaMma, shape: tuple[int, ...]) -> LinearLayout | None:
    rank = len(shape)
    if mma.version_major == 2 and len(mma.instr_shape) == rank:
        tile_shape = list(mma.instr_shape)
    elif mma.version_major == 3 and rank == 2 and len(mma.instr_shape) == 3:
        tile_shape = list(mma.instr_shape[:2])
    else:
        return None
    if len(mma.warps_per_cta) != rank:
        return None
    _need_pow2(mma.warps_per_cta)
    order = _matrix_order(rank, row_major=True)
    cta = _mma_tile(tile_shape, 2, order, order)
    # wgmma (Hopper) stacks the 4 warps of a warpgroup along M; mma.sync goes along N first.
    warp_order = _matrix_order(rank, row_major=mma.version_major != 3)
    cta = cta * _standard_nd("warp", mma.warps_per_cta, warp_order).transpose_outs(cta.out_names)
    return _fit(cta, mma.cta_layout, shape)


def _nvidia_operand(dot: DotOperand, mma: NvidiaMma, shape: tuple[int, ...]) -> LinearLayout | None:
    rank = len(shape)
    if dot.k_width is None or not _pow2(dot.k_width) or len(mma.warps_per_cta) != rank or rank < 2:
        return None
    a = dot.op_idx == 0
    if mma.version_major not in (2, 3) or (mma.version_major == 3 and not a):
        return None  # wgmma reads B from shared memory
    _need_pow2(mma.warps_per_cta)
    tile_shape = [1] * rank
    if a:
        tile_shape[rank - 2], tile_shape[rank - 1] = 16, dot.k_width * 8
    else:
        tile_shape[rank - 2], tile_shape[rank - 1] = dot.k_width * 8, 8
    order = _operand_order(dot.op_idx, rank)
    cta = _mma_tile(tile_shape, dot.k_width, order, order)
    k_dim = rank - 1 if a else rank - 2
    warp_order = _matrix_order(rank, row_major=mma.version_major != 3)
    warps = _broadcast_k("warp", mma.warps_per_cta, warp_order, k_dim)
    cta = cta * warps.transpose_outs(cta.out_names)
    return _fit(cta, mma.cta_layout, shape)


# -- dot operands -------------------------------------------------------------------------------


def _fma_operand(dot: DotOperand, b: Blocked, shape: tuple[int, ...]) -> LinearLayout | None:
    """FMA dots: each thread holds the whole K extent of its rows (fmaDotToLinearLayout)."""
    rank = len(shape)
    if b.rank != rank:
        return None
    _need_pow2(b.size_per_thread, b.threads_per_warp, b.warps_per_cta)
    k_dim = rank - 1 if dot.op_idx == 0 else rank - 2
    per_thread = list(b.size_per_thread)
    per_thread[k_dim] = shape[k_dim]
    rep = [f"dim{d}" for d in b.order]
    cta = _standard_nd("register", per_thread, b.order).transpose_outs(rep) \
        * _broadcast_k("lane", b.threads_per_warp, b.order, k_dim).transpose_outs(rep) \
        * _broadcast_k("warp", b.warps_per_cta, b.order, k_dim).transpose_outs(rep)
    return _fit(cta, b.cta_layout, shape)


def _dot_operand(dot: DotOperand, shape: tuple[int, ...]) -> LinearLayout | None:
    parent: Layout = dot.parent
    if getattr(parent, "extras", ()):
        return None
    if isinstance(parent, AmdMfma):
        return _mfma_operand(dot, parent, shape)
    if isinstance(parent, NvidiaMma):
        return _nvidia_operand(dot, parent, shape)
    if isinstance(parent, Blocked):
        return _fma_operand(dot, parent, shape)
    return None
