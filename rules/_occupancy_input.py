"""Where an occupancy rule's finding points: the artifact line an occupancy input came from
(IRS402, IRS403, IRS404)."""

from __future__ import annotations

from pathlib import Path

STAGES = {".amdgcn": "amdgcn", ".json": "json", ".cubin": "cubin", ".ptx": "ptx"}


def input_artifact(ctx, name: str) -> dict:
    """stage/path/lines of the artifact line an occupancy input was read from (e.g. `.vgpr_count`)."""
    origin = next(i.origin for i in ctx.occupancy.inputs if i.name == name)
    return {"stage": STAGES.get(Path(origin.path).suffix, "occupancy"), "path": origin.path,
            "lines": [origin.line] if origin.line is not None else []}
