"""MLIR types as Triton prints them, typed: tensors with encodings, pointers, memdescs.

`tensor<128x64xf16, #blocked>`, `!tt.ptr<f16>`, `!ttg.memdesc<2x128x64xf16, #shared,
#smem, mutable>`. A type irscope does not model is kept as `OtherType` with its text.
Encodings are Layout values from irscope.ir.layouts.encodings (or None for a plain tensor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

# Element widths in bits; `f8E4M3FN`-style names are all 8 bits.
_SCALAR_BITS = {"i1": 1, "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32, "index": 64}


@dataclass(frozen=True)
class ScalarType:
    name: str  # "f16", "i32", "index", "f8E4M3FN"

    @property
    def bits(self) -> Optional[int]:
        if self.name in _SCALAR_BITS:
            return _SCALAR_BITS[self.name]
        if self.name.startswith("f8") or self.name.startswith("f4") or self.name.startswith("f6"):
            return int(self.name[1])
        if self.name[:1] in "iu" and self.name[1:].isdigit():
            return int(self.name[1:])
        return None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType:
    pointee: "IrType"
    address_space: int = 1

    @property
    def bits(self) -> int:
        return 64

    def __str__(self) -> str:
        space = "" if self.address_space == 1 else f", {self.address_space}"
        return f"!tt.ptr<{self.pointee}{space}>"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[Optional[int], ...]
    element: "IrType"
    encoding: object = None  # an irscope.ir.layouts.encodings Layout, or None
    encoding_ref: Optional[str] = None  # as written: "#blocked", "#ttg.slice<{dim = 1, parent = #mma}>"

    @property
    def numel(self) -> Optional[int]:
        total = 1
        for dim in self.shape:
            if dim is None:
                return None
            total *= dim
        return total

    def __str__(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        body = f"{dims}x{self.element}" if self.shape else str(self.element)
        return f"tensor<{body}, {self.encoding_ref}>" if self.encoding_ref else f"tensor<{body}>"


@dataclass(frozen=True)
class MemDescType:
    """A buffer in shared (or tensor) memory: `!ttg.memdesc<...>`, `!tt.memdesc<...>` in 3.0-3.2."""

    shape: tuple[Optional[int], ...]
    element: "IrType"
    encoding: object = None
    memory_space: Optional[str] = None  # "shared_memory", "tensor_memory"; None before 3.2
    mutable: bool = False
    alloc_shape: tuple[int, ...] = ()
    encoding_ref: Optional[str] = None

    def __str__(self) -> str:
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        parts = [f"{dims}x{self.element}"] + ([self.encoding_ref] if self.encoding_ref else [])
        return f"!ttg.memdesc<{', '.join(parts + (['mutable'] if self.mutable else []))}>"


@dataclass(frozen=True)
class OtherType:
    """Any type irscope keeps as text: `!ttg.async.token`, `!tt.tensordesc<...>`, `vector<4xf32>`."""

    text: str

    def __str__(self) -> str:
        return self.text


IrType = Union[ScalarType, PointerType, TensorType, MemDescType, OtherType]

ASYNC_TOKEN = OtherType("!ttg.async.token")


def element_of(ty: object) -> object:
    """The scalar element of a tensor or memdesc type, else the type itself."""
    return ty.element if isinstance(ty, (TensorType, MemDescType)) else ty


def encoding_of(ty: object) -> object:
    return ty.encoding if isinstance(ty, (TensorType, MemDescType)) else None


def with_element(ty: object, element: object) -> object:
    """`tensor<128xf32, #b>` with another element type (tt.load's result, a compare's i1)."""
    if isinstance(ty, TensorType):
        return TensorType(ty.shape, element, ty.encoding, ty.encoding_ref)
    return element
