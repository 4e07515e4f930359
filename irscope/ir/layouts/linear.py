"""Linear layouts over F2: which tensor element each register/lane/warp/block bit holds.

A linear layout maps the bits of a hardware index (`register`, `lane`, `warp`, `block`) to
tensor coordinates by XOR of per-bit basis vectors. Triton lowers every register layout to one
(`lib/Dialect/TritonGPU/IR/LinearLayoutConversions.cpp`) and decides how a `convert_layout` moves
data by comparing two of them. `to_linear` follows Triton's definitions (as of Triton 3.9);
this module is our own small implementation of the algebra in `include/triton/Tools/LinearLayout.h`.
Only power-of-two shapes are modelled; anything else gives None.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

Basis = tuple[int, ...]


class _derived:
    """A value computed from a frozen layout's fields on first read and kept in its instance dict
    (functools.cached_property without its per-instance lock, which cost more than the value on
    Python 3.11: products make many short-lived layouts). eq and hash still see only the fields."""

    def __init__(self, compute) -> None:
        self.compute = compute
        self.name = compute.__name__

    def __get__(self, layout, owner=None):
        if layout is None:
            return self
        value = layout.__dict__[self.name] = self.compute(layout)
        return value


@dataclass(frozen=True)
class LinearLayout:
    """`bases[in_dim][i]` is the image of bit i of `in_dim`, one coordinate per `out_dims` entry."""

    bases: tuple[tuple[str, tuple[Basis, ...]], ...]
    out_dims: tuple[tuple[str, int], ...]  # (name, size); sizes are powers of two

    # -- reading ------------------------------------------------------------------------------
    # Derived views, computed once per layout: products and solves read them hundreds of times.
    @_derived
    def in_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.bases)

    @_derived
    def out_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.out_dims)

    @_derived
    def _bases_by_dim(self) -> Mapping[str, tuple[Basis, ...]]:
        return MappingProxyType(dict(self.bases))

    @_derived
    def _out_sizes(self) -> Mapping[str, int]:
        return MappingProxyType(dict(self.out_dims))

    def basis(self, in_dim: str) -> tuple[Basis, ...]:
        return self._bases_by_dim.get(in_dim, ())

    def in_size(self, in_dim: str) -> int:
        return 1 << len(self.basis(in_dim))

    def out_size(self, out_dim: str) -> int:
        return self._out_sizes.get(out_dim, 1)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(size for _, size in self.out_dims)

    def apply(self, **index: int) -> tuple[int, ...]:
        """Tensor coordinates held at a hardware index, e.g. `apply(register=3, lane=5)`."""
        out = [0] * len(self.out_dims)
        for in_dim, bases in self.bases:
            value = index.get(in_dim, 0)
            for bit, basis in enumerate(bases):
                if value >> bit & 1:
                    out = [a ^ b for a, b in zip(out, basis)]
        return tuple(out)

    def __str__(self) -> str:
        parts = [f"{name}={[list(b) for b in bases]}" for name, bases in self.bases]
        return "{" + ", ".join(parts) + "} -> " + "x".join(str(s) for s in self.shape)

    # -- building -----------------------------------------------------------------------------
    @staticmethod
    def empty() -> LinearLayout:
        return LinearLayout((), ())

    @staticmethod
    def identity1d(size: int, in_dim: str, out_dim: str) -> LinearLayout:
        """Bit i of `in_dim` -> 2**i along `out_dim`. Size 0 gives the empty layout, as in Triton."""
        if size == 0:
            return LinearLayout.empty()
        _check_pow2(size)
        return LinearLayout(((in_dim, tuple((1 << i,) for i in range(size.bit_length() - 1))),), ((out_dim, size),))

    @staticmethod
    def zeros1d(size: int, in_dim: str, out_dim: str, out_size: int = 1) -> LinearLayout:
        """Every bit of `in_dim` maps to 0: the data is broadcast over that index."""
        if size == 0:
            return LinearLayout.empty()
        _check_pow2(size)
        return LinearLayout(((in_dim, tuple((0,) for _ in range(size.bit_length() - 1))),), ((out_dim, out_size),))

    def __mul__(self, outer: LinearLayout) -> LinearLayout:
        """Triton's product: `outer` repeats `self`; shared dims stack with `outer` more major."""
        inner = self
        if not inner.bases and not inner.out_dims:  # the empty layout is the product's unit
            return outer
        if _is_unit_1d(outer) and outer.in_names[0] in inner._bases_by_dim and outer.out_names[0] in inner._out_sizes:
            return inner  # repeating once along dims it already has (ensure_not_smaller's usual step)
        in_names = _supremum(inner.in_names, outer.in_names)
        out_names = _supremum(inner.out_names, outer.out_names)
        inner_log = [_log2(inner.out_size(d)) for d in out_names]
        width = len(out_names)
        # Where each side's coordinates land in the product, and by how much `outer`'s are shifted.
        inner_at = [out_names.index(d) for d in inner.out_names]
        outer_at = [out_names.index(d) for d in outer.out_names]
        outer_shift = [inner_log[k] for k in outer_at]
        bases = []
        for in_dim in in_names:
            rows: list[Basis] = []
            for basis in inner.basis(in_dim):
                row = [0] * width
                for k, value in zip(inner_at, basis):
                    row[k] = value
                rows.append(tuple(row))
            for basis in outer.basis(in_dim):
                row = [0] * width
                for k, shift, value in zip(outer_at, outer_shift, basis):
                    row[k] = value << shift
                rows.append(tuple(row))
            bases.append((in_dim, tuple(rows)))
        out_dims = tuple((d, 1 << (log + _log2(outer.out_size(d)))) for d, log in zip(out_names, inner_log))
        return LinearLayout(tuple(bases), out_dims)

    def transpose_outs(self, names: Sequence[str]) -> LinearLayout:
        if tuple(names) == self.out_names:
            return self
        if sorted(names) != sorted(self.out_names):
            raise ValueError(f"transpose_outs: {list(names)} is not a permutation of {list(self.out_names)}")
        idx = [self.out_names.index(n) for n in names]
        bases = tuple((d, tuple(tuple(b[i] for i in idx) for b in bs)) for d, bs in self.bases)
        return LinearLayout(bases, tuple((n, self.out_size(n)) for n in names))

    def transpose_ins(self, names: Sequence[str]) -> LinearLayout:
        if sorted(names) != sorted(self.in_names):
            raise ValueError(f"transpose_ins: {list(names)} is not a permutation of {list(self.in_names)}")
        return LinearLayout(tuple((n, self.basis(n)) for n in names), self.out_dims)

    def sublayout(self, in_names: Iterable[str], out_names: Iterable[str]) -> LinearLayout:
        ins, outs = list(in_names), list(out_names)
        idx = [self.out_names.index(n) for n in self.out_names if n in outs]
        bases = tuple((d, tuple(tuple(b[i] for i in idx) for b in bs)) for d, bs in self.bases if d in ins)
        return LinearLayout(bases, tuple(od for od in self.out_dims if od[0] in outs))

    def with_bases(self, in_dim: str, bases: Sequence[Basis]) -> LinearLayout:
        return LinearLayout(tuple((d, tuple(bases) if d == in_dim else bs) for d, bs in self.bases), self.out_dims)

    # -- flattening: one integer per basis, the out dims packed minor-first ---------------------
    def flat(self, basis: Basis, like: LinearLayout | None = None) -> int:
        """Pack a basis into one integer using `like`'s out-dim order and sizes (default: own)."""
        return _pack(basis, self._packing(like or self))

    def flat_columns(self, like: LinearLayout | None = None) -> list[int]:
        packing = self._packing(like or self)
        return [_pack(b, packing) for _, bs in self.bases for b in bs]

    def _packing(self, ref: LinearLayout) -> list[tuple[int, int]]:
        """(coordinate index in a basis, bit offset in `ref`'s packing) of each out dim both have."""
        position = {name: k for k, name in enumerate(self.out_names)}
        packing, shift = [], 0
        for name, size in ref.out_dims:
            if name in position:
                packing.append((position[name], shift))
            shift += _log2(size)
        return packing

    @property
    def total_out_bits(self) -> int:
        return sum(_log2(size) for _, size in self.out_dims)

    def is_subpermutation(self) -> bool:
        """True when every basis is 0 or one bit and no two bases share a bit (Triton's
        'subpermutation' layouts: blocked, mma, slices and most linear layouts)."""
        seen: set[int] = set()
        for value in self.flat_columns():
            if value == 0:
                continue
            if value & (value - 1) or value in seen:
                return False
            seen.add(value)
        return True

    def covers_bijectively(self) -> bool:
        """Every tensor element is held exactly once, ignoring bases that broadcast (map to 0)."""
        columns = [c for c in self.flat_columns() if c]
        return len(columns) == self.total_out_bits and _rank(columns) == len(columns)


def _is_unit_1d(layout: LinearLayout) -> bool:
    """One in-dim with no bits onto one out-dim of size 1: `identity1d(1, ...)`, a product's no-op."""
    return len(layout.bases) == 1 and not layout.bases[0][1] and len(layout.out_dims) == 1 \
        and layout.out_dims[0][1] == 1


def _pack(basis: Basis, packing: list[tuple[int, int]]) -> int:
    value = 0
    for k, shift in packing:
        if k < len(basis):
            value |= basis[k] << shift
    return value


def _supremum(x: Sequence[str], y: Sequence[str]) -> tuple[str, ...]:
    """The shortest order containing `x` and `y` as subsequences (Triton's `supremum`)."""
    if x == y or not y:  # the usual case in products: the same dims, or a side with none
        return tuple(x)
    if not x:
        return tuple(y)
    result: list[str] = []
    pos_x = {e: i for i, e in enumerate(x)}
    pos_y = {e: i for i, e in enumerate(y)}
    i = j = 0
    inf = len(x) + len(y) + 1
    while i < len(x) or j < len(y):
        while i < len(x) and x[i] in result:
            i += 1
        while j < len(y) and y[j] in result:
            j += 1
        if i >= len(x) and j >= len(y):
            break
        if i < len(x) and j < len(y) and x[i] == y[j]:
            if pos_y[x[i]] < j:
                raise ValueError("no common order of dimensions")
            result.append(x[i])
            i, j = i + 1, j + 1
            continue
        cand_x = pos_y[x[i]] if i < len(x) and x[i] in pos_y and pos_y[x[i]] >= j else inf
        cand_y = pos_x[y[j]] if j < len(y) and y[j] in pos_x and pos_x[y[j]] >= i else inf
        if i < len(x) and cand_x == inf:
            result.append(x[i])
            i += 1
        elif j < len(y) and cand_y == inf:
            result.append(y[j])
            j += 1
        elif cand_x <= cand_y:
            result.append(x[i])
            i += 1
        else:
            result.append(y[j])
            j += 1
    return tuple(result)


# -- shape fitting (Triton's ensureLayoutNotSmallerThan / NotLargerThan) -----------------------


def ensure_not_smaller(layout: LinearLayout, shape: Mapping[str, int]) -> LinearLayout:
    """Repeat the layout over its first in-dim (registers) until each out dim reaches `shape`,
    going through the out dims in the layout's order (minor first)."""
    first = layout.in_names[0]
    result = layout
    for name in layout.out_names:
        actual, desired = layout.out_size(name), shape[name]
        result = result * LinearLayout.identity1d(desired // actual, first, name)
    return result


def ensure_not_larger(layout: LinearLayout, shape: Mapping[str, int], broadcast_registers: bool = True
                      ) -> LinearLayout:
    """Shrink out dims that exceed `shape`: the largest bases along them become 0 (broadcast),
    or, for registers with `broadcast_registers=False`, are dropped."""
    if all(size <= shape[name] for name, size in layout.out_dims):
        return layout  # nothing to shrink
    bases = {d: [list(b) for b in bs] for d, bs in layout.bases}
    dropped_registers: set[int] = set()
    for index, name in enumerate(layout.out_names):
        actual, desired = layout.out_size(name), shape[name]
        if actual <= desired:
            continue
        along = [(d, i, b[index]) for d, bs in bases.items() for i, b in enumerate(bs) if b[index] != 0]
        for d, i, value in sorted(along, key=lambda t: -t[2]):
            if actual <= desired:
                break
            if value & (value - 1):
                raise ValueError("cannot shrink a layout whose bases are not single bits")
            if not broadcast_registers and d == "register":
                dropped_registers.add(i)
            else:
                bases[d][i][index] = 0
            actual >>= 1
    if dropped_registers:
        bases["register"] = [b for i, b in enumerate(bases["register"]) if i not in dropped_registers]
    out_dims = tuple((n, min(s, shape[n])) for n, s in layout.out_dims)
    return LinearLayout(tuple((d, tuple(tuple(b) for b in bs)) for d, bs in bases.items()), out_dims)


# -- solving over F2 ---------------------------------------------------------------------------


def _rank(columns: list[int]) -> int:
    pivots: list[int] = []
    for c in columns:
        for p in pivots:
            c = min(c, c ^ p)
        if c:
            pivots.append(c)
    return len(pivots)


def _rref(rows: list[int]) -> list[int]:
    """Reduced row echelon form; each row's pivot is its lowest set bit (column)."""
    rows = list(rows)
    done = 0
    width = max((r.bit_length() for r in rows), default=0)
    for col in range(width):
        pick = next((k for k in range(done, len(rows)) if rows[k] >> col & 1), None)
        if pick is None:
            continue
        rows[done], rows[pick] = rows[pick], rows[done]
        for k in range(len(rows)):
            if k != done and rows[k] >> col & 1:
                rows[k] ^= rows[done]
        done += 1
    return rows


def _solve(a_cols: list[int], b_cols: list[int], out_bits: int, injective: bool) -> list[int]:
    """X with A X = B over F2, free variables 0 (the reduced row echelon solution, as Triton's
    `lstsq`). Columns are flat basis values; returns one bitmask over A's columns per B column.

    With `injective`, the k-th zero column of A and of B first get the same private row
    `out_bits + k`: how Triton <= 3.2 (`getInjectiveMat`) paired up broadcast bits."""
    a_cols, b_cols = list(a_cols), list(b_cols)
    if injective:
        for cols in (a_cols, b_cols):
            extra = out_bits
            for k, c in enumerate(cols):
                if c == 0:
                    cols[k], extra = 1 << extra, extra + 1
    n_a = len(a_cols)
    n_rows = max((c.bit_length() for c in a_cols + b_cols), default=0)
    rows = []
    for r in range(n_rows):
        row = 0
        for k, c in enumerate(a_cols + b_cols):
            row |= (c >> r & 1) << k
        rows.append(row)
    pivot_row: dict[int, int] = {}
    for row in _rref(rows):
        if row == 0:
            continue
        col = (row & -row).bit_length() - 1
        if col >= n_a:
            if injective:
                continue  # a broadcast bit only the destination has: Triton reads it as 0
            raise ValueError("the destination holds data the source does not have")
        pivot_row[col] = row >> n_a
    return [sum((pivot_row.get(k, 0) >> j & 1) << k for k in range(n_a)) for j in range(len(b_cols))]


def invert_and_compose(dst: LinearLayout, src: LinearLayout, injective: bool = False) -> LinearLayout:
    """The map from `dst`'s hardware index to the `src` hardware index holding the same element
    (Triton's `dst.invertAndCompose(src)`). In-dims whose bases agree are mapped to themselves."""
    names = dst.out_names
    src = src.transpose_outs(names)
    same: list[str] = []
    if not injective:  # the identity heuristic arrived with the least-squares solver (3.3)
        same = [d for d in src.in_names if d in dst.in_names
                and src.sublayout([d], names) == dst.sublayout([d], names)]
    src_rest = [d for d in src.in_names if d not in same]
    dst_rest = [d for d in dst.in_names if d not in same]
    a = src.sublayout(src_rest, names)
    b = dst.sublayout(dst_rest, names)
    solution = _solve(a.flat_columns(), b.flat_columns(src), src.total_out_bits, injective) if src_rest else []
    # Split the flat solution back into named dims: rows of b are dst bits, values src bits.
    out_sizes = [(d, src.in_size(d)) for d in src_rest]
    rows: list[tuple[str, tuple[Basis, ...]]] = []
    k = 0
    for d in dst_rest:
        vectors = []
        for _ in dst.basis(d):
            vectors.append(_unflatten(solution[k], out_sizes))
            k += 1
        rows.append((d, tuple(vectors)))
    result = LinearLayout(tuple(rows), tuple(out_sizes))
    for d in same:
        result = result * LinearLayout.identity1d(src.in_size(d), d, d)
    return result.transpose_ins(dst.in_names).transpose_outs(src.in_names)


def _unflatten(value: int, sizes: list[tuple[str, int]]) -> Basis:
    out = []
    for _, size in sizes:
        bits = _log2(size)
        out.append(value & ((1 << bits) - 1))
        value >>= bits
    return tuple(out)


def quotient(layout: LinearLayout, dim: str) -> LinearLayout | None:
    """Drop `dim` from ins and outs when the layout is the identity on it and does not mix it
    with other dims (Triton's `LinearLayout::quotient`); None otherwise."""
    if dim not in layout.in_names or dim not in layout.out_names:
        return None
    if layout.in_size(dim) != layout.out_size(dim):
        return None
    k = layout.out_names.index(dim)
    for bit, basis in enumerate(layout.basis(dim)):
        if basis[k] != 1 << bit or any(v for i, v in enumerate(basis) if i != k):
            return None
    for other, bases in layout.bases:
        if other != dim and any(b[k] for b in bases):
            return None
    return layout.sublayout([d for d in layout.in_names if d != dim], [d for d in layout.out_names if d != dim])


def minimal_conversion(src: LinearLayout, dst: LinearLayout, injective: bool = False) -> LinearLayout:
    """`dst -> src` with the dims that need no data movement divided out, slowest first
    (block, warp, lane, register), as Triton's `minimalCvtLayout`. Its remaining out dims say
    what a convert_layout must cross: none or `register` stays in a thread, `lane` crosses
    lanes of a warp, `warp` crosses warps, `block` crosses CTAs."""
    comp = invert_and_compose(dst, src, injective)
    for dim in ("block", "warp", "lane", "register"):
        reduced = quotient(comp, dim)
        if reduced is None:
            break
        comp = reduced
    return comp


def _log2(size: int) -> int:
    return size.bit_length() - 1


def _check_pow2(size: int) -> None:
    if size <= 0 or size & (size - 1):
        raise ValueError(f"{size} is not a power of two")
