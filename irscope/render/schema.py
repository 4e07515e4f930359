"""docs/report.schema.json, the JSON Schema (draft 2020-12) of the saved Report, generated from
the model's type hints, so the schema and what `Report.to_json()` writes cannot drift apart.

Regenerate with `python -m irscope.render.schema docs/report.schema.json`; a test fails when
the committed file differs from what this writes, and validates real reports against it.
docs/json-schema.md says what each field means.

Objects allow keys the schema does not name: a report may gain fields within a schema
version, and readers ignore keys they do not know.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Union

from irscope.model.line_ranges import LineRanges
from irscope.model.kernel import STAGES, Fact
from irscope.model.report import SCHEMA, SCHEMA_VERSION, Report
from irscope.model.serde import _hints, saved_fields

_SCALARS = {str: {"type": "string"}, int: {"type": "integer"}, bool: {"type": "boolean"},
            float: {"type": "number"}}
# What the type hints cannot say: the documented values of a few fields (a Literal hint says its own).
_OVERRIDES: dict[tuple[str, str], dict] = {
    ("Report", "schema"): {"const": SCHEMA},
    ("Report", "schema_version"): {"const": SCHEMA_VERSION},
    ("Artifact", "stage"): {"enum": list(STAGES)},
    ("Kernel", "layout"): {"enum": ["triton-cache", "kernel-dump", "file"]},
    ("Target", "backend"): {"enum": ["hip", "cuda"]},
    ("InstructionMix", "isa"): {"enum": ["amdgcn", "ptx", "sass"]},
    ("Occupancy", "unit"): {"enum": ["waves/SIMD", "warps/SM"]},
}
_FACT_NAMES = {"integer": "IntFact", "string": "StringFact", "array": "IntListFact"}


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, dict] = {}
        self.names: dict[type, str] = {}

    def name_of(self, cls: type) -> str:
        if cls not in self.names:
            name = cls.__name__
            if name in self.names.values():  # pass_timeline.Origin beside model.Origin
                name = "".join(p.title() for p in cls.__module__.rsplit(".", 1)[-1].split("_")) + name
            self.names[cls] = name
        return self.names[cls]

    def ref(self, cls: type, tagged: bool = False) -> dict:
        name = self.name_of(cls)  # a class is written tagged wherever it is in a union (Resources)
        if name not in self.defs:
            self.defs[name] = {}  # reserve first: definitions may refer to themselves
            self.defs[name] = self.object_schema(cls, tagged)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, cls: type, tagged: bool) -> dict:
        hints = _hints(cls)
        props: dict[str, Any] = {}
        if tagged:  # serde writes a union of dataclasses with the class name as "type"
            props["type"] = {"const": cls.__name__}
        for f in saved_fields(cls):
            props[f.name] = {**self.schema(hints[f.name]), **_OVERRIDES.get((cls.__name__, f.name), {})}
        out: dict[str, Any] = {"type": "object"}
        doc = (cls.__doc__ or "").strip()
        if doc and not doc.startswith(cls.__name__ + "("):  # skip dataclasses' generated signature
            out["description"] = " ".join(doc.split("\n\n")[0].split())
        out["properties"] = props
        out["required"] = list(props)  # to_data writes every field, null when absent
        return out

    def fact(self, tp: Any) -> dict:
        (value_type,) = typing.get_args(tp)
        value = self.schema(value_type)
        name = _FACT_NAMES[value["type"]]
        if name not in self.defs:
            self.defs[name] = {"type": "object", "description": "A value and the artifact line it was read from.",
                               "properties": {"value": value, "origin": self.ref(_model_origin())},
                               "required": ["value", "origin"]}
        return {"$ref": f"#/$defs/{name}"}

    def schema(self, tp: Any) -> dict:
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        if tp is LineRanges:
            return {"type": "string", "pattern": r"^(\d+(-\d+)?(,\d+(-\d+)?)*)?$",
                    "description": "artifact lines as ranges, \"14-18,1901\""}
        origin = typing.get_origin(tp)
        if origin is typing.Literal:  # a closed set of names (a severity), checked when a report is read
            return {"type": "string", "enum": list(typing.get_args(tp))}
        if origin in (Union, types.UnionType):
            args = typing.get_args(tp)
            members = [a for a in args if a is not type(None)]
            classes = [a for a in members if dataclasses.is_dataclass(a)]
            if len(classes) > 1:
                choices = [self.ref(c, tagged=True) for c in classes]
            else:
                choices = [self.schema(a) for a in members]
            if type(None) in args:
                choices.append({"type": "null"})
            return choices[0] if len(choices) == 1 else {"anyOf": choices}
        if origin is Fact:
            return self.fact(tp)
        if origin in (tuple, list):
            args = [a for a in typing.get_args(tp) if a is not Ellipsis]
            return {"type": "array", "items": self.schema(args[0]) if args else {}}
        if tp is dict or origin in (dict, collections.abc.Mapping):
            args = typing.get_args(tp)
            value = args[1] if len(args) == 2 else object
            return {"type": "object", "additionalProperties": self.schema(value) if value in _SCALARS else True}
        if dataclasses.is_dataclass(tp):
            return self.ref(tp)
        return {}  # object, Any: any JSON value


def _model_origin() -> type:
    from irscope.model.kernel import Origin

    return Origin


def report_schema() -> dict:
    from irscope.occupancy.families import Family

    builder = _Builder()
    top = builder.object_schema(Report, tagged=False)
    # Derived when written (irscope/occupancy/families.py), ignored when read: not required.
    top["properties"]["families"] = {"type": "array", "items": builder.ref(Family),
                                     "description": "the kernels grouped into families of autotune configs"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"irscope report, schema version {SCHEMA_VERSION}",
        "description": "What `irscope scan --json` writes; docs/json-schema.md says what each field means. "
                       "Generated by `python -m irscope.render.schema`.",
        **{k: v for k, v in top.items() if k != "description"},
        "$defs": dict(sorted(builder.defs.items())),
    }


def schema_text() -> str:
    return json.dumps(report_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    Path(sys.argv[1] if len(sys.argv) > 1 else "docs/report.schema.json").write_text(schema_text(), encoding="utf-8")
