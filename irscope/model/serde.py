"""Frozen dataclasses <-> JSON-ready data, driven by the type hints.

One small converter instead of hand-written to_dict/from_dict on every model class,
so a field added to the model is saved and loaded without touching this file.
A field whose type is a union of dataclasses is written with a `"type"` tag.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import operator
import types
import typing
from functools import lru_cache, partial
from typing import Any, Callable, Mapping, Union

from irscope.model.line_ranges import LineRanges


# Saved reports and index entries are untrusted JSON. Every count irscope saves is far below this;
# a raw metadata value may exceed 64 bits (and is ignored with a warning), but an integer of more
# digits than a float can hold (1.8e308) is no number of a kernel: an OverflowError waiting in a
# renderer's division (a 400-digit `active`, found by bench/fuzz.py --reports).
MAX_DIGITS = 300


def loads_bounded(text: str | bytes) -> Any:
    """json.loads, refusing (ValueError) an integer of more than MAX_DIGITS digits."""
    return json.loads(text, parse_int=_bounded_int)


def _bounded_int(digits: str) -> int:
    if len(digits) > MAX_DIGITS + 1:  # + 1: a minus sign
        raise ValueError(f"an integer of {len(digits.lstrip('-')):,} digits (at most {MAX_DIGITS})")
    return int(digits)


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: encode(getattr(obj, name)) for name, encode in _plan(type(obj))}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): to_data(v) for k, v in obj.items()}
    return obj


def _line_text(lines: LineRanges) -> str:
    return lines.text


def _identity(value: Any) -> Any:
    return value


@lru_cache(maxsize=None)
def _plan(cls: type) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """How to write each field of `cls`, decided once from its type hints: plain values as
    they are, dataclasses by their own plan, a union of dataclasses with its "type" tag."""
    hints = _hints(cls)
    return tuple((f.name, _encoder(hints[f.name])) for f in saved_fields(cls))


def saved_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    """The fields a report holds: all but the machine-local ones (metadata {"saved": False}), which
    are never written, and never read from a report or an index entry (a crafted one cannot set them)."""
    return tuple(f for f in dataclasses.fields(cls) if f.metadata.get("saved", True))


def _encoder(tp: Any) -> Callable[[Any], Any]:
    if tp is LineRanges:
        return _line_text
    if tp in (int, str, bool, float, type(None)) or typing.get_origin(tp) is typing.Literal:
        return _identity
    members = _dataclass_members(tp)
    if len(members) > 1:
        return _tagged
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if all(a in (int, str, bool, float) for a in args):
            return _identity
    if origin in (tuple, list):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        if len(args) == 1 and args[0] in (int, str, bool, float):
            return list
        if len(args) == 1:
            item = _encoder(args[0])
            return lambda values: [item(v) for v in values]
    return to_data  # anything else (Any, a TypeVar, a Mapping): decided by the value


def _tagged(value: Any) -> Any:
    if value is None:
        return None
    return {"type": type(value).__name__, **to_data(value)}


def from_data(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from `to_data` output; raises ValueError on a mismatch."""
    return _decoder(tp)(data)


@lru_cache(maxsize=None)
def _decoder(tp: Any) -> Callable[[Any], Any]:
    """How to read a value of type `tp`, decided once from its type hints (the result index
    reads thousands of reports a scan: walking the hints per value cost 5x the JSON parse)."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union_decoder(tp)
    if origin is typing.Literal:  # a closed set of names (a severity): anything else is malformed
        return partial(_one_of, typing.get_args(tp))
    base = origin or tp
    if dataclasses.is_dataclass(base):
        return _dataclass_decoder(tp, base)
    if tp is LineRanges:
        return _line_ranges
    if base in (tuple, list):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        item = _decoder(args[0] if args else Any)
        if base is tuple:
            return lambda data: tuple([item(v) for v in _list(data)])
        return lambda data: [item(v) for v in _list(data)]
    if base in (dict, collections.abc.Mapping):
        args = typing.get_args(tp)
        value = _decoder(args[1] if args else Any)
        return lambda data: {k: value(v) for k, v in data.items()}
    if isinstance(tp, typing.TypeVar) or tp is Any:
        return _any
    if tp in (int, float, str, bool):
        return partial(_exactly, tp)
    return _any_as_is


def _union_decoder(tp: Any) -> Callable[[Any], Any]:
    args = typing.get_args(tp)
    optional = type(None) in args
    classes = _dataclass_members(tp)
    if len(classes) > 1:
        by_tag: dict[str, type] = {}
        for c in classes:
            by_tag.setdefault(c.__name__, c)

        def tagged(data: Any) -> Any:
            if data is None and optional:
                return None
            tag = data.get("type") if isinstance(data, dict) else None
            chosen = by_tag.get(tag) if isinstance(tag, str) else None
            if chosen is None:
                raise ValueError(f"unknown type tag {tag!r:.40}; expected one of {list(by_tag)}")
            return _decoder(chosen)({k: v for k, v in data.items() if k != "type"})

        return tagged
    member = _decoder([a for a in args if a is not type(None)][0])
    if not optional:
        return member
    return lambda data: None if data is None else member(data)


def _dataclass_decoder(tp: Any, base: type) -> Callable[[Any], Any]:
    # The fields' decoders are looked up on first use: a dataclass may hold its own type.
    plan: list[_Plan] = []

    def decode(data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {base.__name__}, found {type(data).__name__}")
        if not plan:
            plan.append(_Plan(tp, base))
        fields = plan[0]
        # A whole object as to_data writes it, checked with C-speed set and map operations (a warm
        # scan reads ~100 of these a kernel from the result index); anything else field by field.
        if fields.names >= data.keys() >= fields.plain_names and all(
                map(frozenset.__contains__, fields.plain_types, map(type, fields.plain_values(data)))):
            kwargs = data.copy()
            for name, read in fields.others:
                if name in kwargs:
                    kwargs[name] = read(kwargs[name])
            return base(**kwargs)
        return base(**{name: read(data[name]) for name, read in fields.every if name in data})

    return decode


class _Plan:
    """How to read one dataclass: its fields of plain types (int, str, ... or None), whose JSON
    values are taken as they are once their types are checked, and the others, read each by its
    own decoder."""

    def __init__(self, tp: Any, base: type) -> None:
        hints = _hints(base)
        # A bare generic (`Fact`, not `Fact[int]`) has no args: its TypeVars stay unbound.
        params = dict(zip(getattr(base, "__parameters__", ()), typing.get_args(tp), strict=False))
        types_ = {f.name: params.get(hints[f.name], hints[f.name]) for f in saved_fields(base)}
        self.every = [(name, _decoder(t)) for name, t in types_.items()]
        self.names = frozenset(types_)
        plain = {name: _plain_types(t) for name, t in types_.items()}
        plain = {name: allowed for name, allowed in plain.items() if allowed}
        self.plain_names = frozenset(plain)
        self.plain_types = list(plain.values())
        getter = operator.itemgetter(*plain) if plain else (lambda data: ())
        self.plain_values = (lambda data: (getter(data),)) if len(plain) == 1 else getter
        self.others = [(name, read) for name, read in self.every if name not in plain]


def _plain_types(tp: Any) -> frozenset[type] | None:
    """The exact types a field's JSON value may have when its decoder would return it as it is."""
    plain = (int, float, str, bool)
    if tp in plain:
        return frozenset({tp})
    if typing.get_origin(tp) in (Union, types.UnionType) and len(_dataclass_members(tp)) <= 1:
        args = typing.get_args(tp)
        first = [a for a in args if a is not type(None)][0]
        if first in plain:
            return frozenset({first, type(None)} if type(None) in args else {first})
    return None


def _line_ranges(data: Any) -> LineRanges:
    try:
        if isinstance(data, str):
            return LineRanges.parse(data)
        return LineRanges.of(int(n) for n in _list(data))  # schema 1 wrote a list of lines
    except (ValueError, TypeError):
        raise ValueError(f"not line ranges: {data!r:.40}") from None


def _any(data: Any) -> Any:
    return tuple(data) if isinstance(data, list) else data


def _any_as_is(data: Any) -> Any:
    return data


def _one_of(names: tuple[str, ...], data: Any) -> Any:
    if not isinstance(data, str) or data not in names:
        raise ValueError(f"expected one of {', '.join(names)}, found {data!r:.40}")
    return data


def _exactly(tp: type, data: Any) -> Any:
    if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
        raise ValueError(f"expected {tp.__name__}, found {data!r:.40}")
    return data


def _list(data: Any) -> list:
    if not isinstance(data, list):
        raise ValueError(f"expected a list, found {type(data).__name__}")
    return data


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _dataclass_members(tp: Any) -> list[type]:
    if typing.get_origin(tp) in (Union, types.UnionType):
        return [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)]
    return [tp] if dataclasses.is_dataclass(tp) else []
