"""Frozen dataclasses <-> JSON-ready data, driven by the type hints.

One small converter instead of hand-written to_dict/from_dict on every model class,
so a field added to the model is saved and loaded without touching this file.
A field whose type is a union of dataclasses is written with a `"type"` tag.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, Callable, Mapping, Union

from irscope.line_ranges import LineRanges


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
    """The fields a report holds: all but the machine-local ones (metadata {"saved": False})."""
    return tuple(f for f in dataclasses.fields(cls) if f.metadata.get("saved", True))


def _encoder(tp: Any) -> Callable[[Any], Any]:
    if tp is LineRanges:
        return _line_text
    if tp in (int, str, bool, float, type(None)):
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
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        classes = _dataclass_members(tp)
        if len(classes) > 1:
            tag = data.get("type") if isinstance(data, dict) else None
            chosen = next((c for c in classes if c.__name__ == tag), None)
            if chosen is None:
                raise ValueError(f"unknown type tag {tag!r}; expected one of {[c.__name__ for c in classes]}")
            return from_data(chosen, {k: v for k, v in data.items() if k != "type"})
        return from_data(members[0], data)
    if origin is typing.Literal:  # a closed set of names (a severity): anything else is malformed
        if not isinstance(data, str) or data not in typing.get_args(tp):
            raise ValueError(f"expected one of {', '.join(typing.get_args(tp))}, found {data!r:.40}")
        return data
    base = origin or tp
    if dataclasses.is_dataclass(base):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {base.__name__}, found {type(data).__name__}")
        hints = _hints(base)
        # A bare generic (`Fact`, not `Fact[int]`) has no args: its TypeVars stay unbound.
        params = dict(zip(getattr(base, "__parameters__", ()), typing.get_args(tp), strict=False))
        kwargs = {}
        for f in saved_fields(base):
            if f.name in data:
                ftype = params.get(hints[f.name], hints[f.name])
                kwargs[f.name] = from_data(ftype, data[f.name])
        return base(**kwargs)
    if tp is LineRanges:
        try:
            if isinstance(data, str):
                return LineRanges.parse(data)
            return LineRanges.of(int(n) for n in _list(data))  # schema 1 wrote a list of lines
        except (ValueError, TypeError):
            raise ValueError(f"not line ranges: {data!r:.40}") from None
    if base is tuple:
        args = typing.get_args(tp)
        item = args[0] if args else Any
        return tuple(from_data(item, v) for v in _list(data))
    if base is list:
        return [from_data(typing.get_args(tp)[0], v) for v in _list(data)]
    if base in (dict, collections.abc.Mapping):
        args = typing.get_args(tp)
        value_type = args[1] if args else Any
        return {k: from_data(value_type, v) for k, v in data.items()}
    if isinstance(tp, typing.TypeVar) or tp is Any:
        return tuple(data) if isinstance(data, list) else data
    if tp in (int, float, str, bool):
        if not isinstance(data, tp) or (tp is int and isinstance(data, bool)):
            raise ValueError(f"expected {tp.__name__}, found {data!r:.40}")
        return data
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
