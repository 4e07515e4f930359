"""A Report as pandas DataFrames, for notebooks, CSV and Parquet (docs/exports.md lists the columns).

`kernels_frame`: one row per kernel, in report order, with the console table's facts as typed
columns; `findings_frame`: one row per finding. Missing numbers are `<NA>` (pandas' nullable
`Int64`), never a guess. pandas is imported here only, so `import irscope` stays light.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from irscope.model.line_ranges import ranges_text
from irscope.model.kernel import AmdResources, Fact, KernelReport, NvidiaResources
from irscope.model.safe_text import surrogates_escaped
from irscope.model.occupancy_labels import LIMITER_LABELS, short_step

if TYPE_CHECKING:
    import pandas as pd

    from irscope.model.report import Report  # Report.to_frame imports this module

# column -> pandas dtype, in frame order. docs/exports.md documents the same (a test compares).
KERNEL_COLUMNS: dict[str, str] = {
    "key": "string", "name": "string", "arch": "string", "backend": "string", "triton": "string",
    "layout": "string", "num_warps": "Int64", "num_stages": "Int64", "shared_bytes": "Int64",
    "registers": "Int64", "agpr": "Int64", "sgpr": "Int64", "vgpr_spill": "Int64", "sgpr_spill": "Int64",
    "spills": "Int64", "scratch_bytes": "Int64", "isa": "string", "instructions": "Int64",
    "instructions_in_loops": "Int64", "loops": "Int64", "occupancy": "Int64", "occupancy_max": "Int64",
    "occupancy_unit": "string", "occupancy_fraction": "Float64", "groups": "Int64", "limiter": "string",
    "to_gain": "string", "findings": "Int64", "findings_error": "Int64", "findings_warning": "Int64",
    "findings_info": "Int64", "problems": "Int64", "status": "string", "complete": "boolean",
    "directory": "string", "hash": "string",
    # irscope scan SCRIPT.py --profile / --profile=counters (docs/profile.md); <NA> without
    "gpu_launches": "Int64", "gpu_time_ns": "Int64", "gpu_share": "Float64", "tensor_bytes": "Int64",
    "ncu_theoretical_warps": "Float64", "ncu_achieved_pct": "Float64", "ncu_dram_bytes": "Int64",
    "ncu_instructions": "Int64", "ncu_agrees": "boolean",
}
FINDING_COLUMNS: dict[str, str] = {
    "kernel": "string", "name": "string", "arch": "string", "code": "string", "slug": "string",
    "severity": "string", "message": "string", "fix": "string", "stage": "string", "path": "string",
    "line": "Int64", "lines": "string", "python_file": "string", "python_line": "Int64", "evidence": "string",
}
COLUMNS = {"kernels": KERNEL_COLUMNS, "findings": FINDING_COLUMNS}


def _v(fact: Fact | None) -> int | None:
    return None if fact is None else fact.value


def _registers(r: KernelReport) -> dict:
    res = r.resources
    if isinstance(res, AmdResources):
        spills = [s for s in (_v(res.vgpr_spill), _v(res.sgpr_spill)) if s is not None]
        return {"registers": _v(res.vgpr_total), "agpr": _v(res.agpr), "sgpr": _v(res.sgpr),
                "vgpr_spill": _v(res.vgpr_spill), "sgpr_spill": _v(res.sgpr_spill),
                "spills": sum(spills) if spills else None, "scratch_bytes": _v(res.scratch_bytes)}
    if isinstance(res, NvidiaResources):
        local = res.local_memory_bytes
        # As the console: Triton's n_spills = local memory bytes / 4.
        return {"registers": _v(res.registers), "spills": None if local is None else local // 4,
                "scratch_bytes": local}
    return {}


def _status(r: KernelReport) -> str:
    errors = sum(p.severity == "error" for p in r.problems)
    if errors:
        return "error"
    if len(r.problems):
        return "incomplete" if not r.kernel.complete else "warning"
    return "ok"


def kernel_record(r: KernelReport) -> dict:
    """One kernel's row as plain Python values (None where unknown)."""
    k, opts = r.kernel, r.kernel.options
    row: dict = dict.fromkeys(KERNEL_COLUMNS)
    row.update(key=k.key, name=k.name, arch=k.target.arch if k.target else None,
               backend=k.target.backend if k.target else None,
               triton=k.triton_version.value if k.triton_version else None, layout=k.layout,
               num_warps=_v(opts.num_warps), num_stages=_v(opts.num_stages), shared_bytes=_v(opts.shared),
               directory=k.directory, hash=k.hash, complete=k.complete, problems=len(r.problems), status=_status(r))
    row.update(_registers(r))
    if r.mix:
        mix = r.mix[0]  # the AMDGCN or the PTX, as the console's `instrs (loop)`
        row.update(isa=mix.isa, instructions=mix.total, instructions_in_loops=mix.count(in_loop=True),
                   loops=mix.loops)
    if r.occupancy is not None:
        o = r.occupancy.occupancy
        row.update(occupancy=o.active, occupancy_max=o.max_active, occupancy_unit=o.unit,
                   occupancy_fraction=o.fraction, groups=o.groups,
                   limiter="+".join(LIMITER_LABELS.get(x, x) for x in o.limiters),
                   to_gain=short_step(r.occupancy))
    if r.time is not None:
        row.update(gpu_launches=r.time.launches, gpu_time_ns=r.time.total_ns, gpu_share=r.time.share,
                   tensor_bytes=r.time.bytes)
    if r.counters is not None:
        c = r.counters
        row.update(ncu_theoretical_warps=c.theoretical_warps, ncu_achieved_pct=c.achieved_pct,
                   ncu_dram_bytes=c.dram_bytes, ncu_instructions=c.instructions, ncu_agrees=c.agrees)
    severities = [f.severity for f in r.findings]
    row.update(findings=len(severities), findings_error=severities.count("error"),
               findings_warning=severities.count("warning"), findings_info=severities.count("info"))
    return row


def finding_records(report: Report) -> list[dict]:
    rows = []
    for r in report.kernels:
        arch = r.kernel.target.arch if r.kernel.target else None
        for f in r.findings:
            rows.append({"kernel": f.kernel, "name": r.kernel.name, "arch": arch, "code": f.code, "slug": f.slug,
                         "severity": f.severity, "message": f.message, "fix": f.fix, "stage": f.stage,
                         "path": f.path, "line": f.line, "lines": ranges_text(f.lines) or None,
                         "python_file": f.python_file, "python_line": f.python_line,
                         "evidence": json.dumps({e.name: e.value for e in f.evidence}, ensure_ascii=False)})
    return rows


def _frame(rows: list[dict], columns: dict[str, str]) -> "pd.DataFrame":
    import pandas as pd

    data = {name: pd.array([_cell(row[name], dtype) for row in rows], dtype=dtype) for name, dtype in columns.items()}
    return pd.DataFrame(data, columns=list(columns))


_INT64 = range(-(1 << 63), 1 << 63)


def _cell(value, dtype: str):
    """A value an Arrow-backed column can hold. Hostile input reaches here only where no reader
    refused it first (a saved report): a lone surrogate (a file name that is not UTF-8) is written
    as a visible `\\udcff`, an integer outside int64 is unknown (<NA>), not the end of every export."""
    if dtype == "string" and isinstance(value, str):
        return surrogates_escaped(value)
    if dtype == "Int64" and isinstance(value, int) and value not in _INT64:
        return None
    return value


def kernels_frame(report: Report) -> "pd.DataFrame":
    return _frame([kernel_record(r) for r in report.kernels], KERNEL_COLUMNS)


def findings_frame(report: Report) -> "pd.DataFrame":
    return _frame(finding_records(report), FINDING_COLUMNS)


def read_csv(path, kind: str = "kernels") -> "pd.DataFrame":
    """A CSV written by `irscope scan --csv`, back as the frame it was written from (same dtypes)."""
    import pandas as pd

    columns = COLUMNS[kind]
    # Only an empty field is missing: a kernel named `NA` or `null` stays a name.
    # pandas 3 reads floats back exactly by default, and deprecates asking for it.
    exact = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    frame = pd.read_csv(path, dtype=columns, keep_default_na=False, na_values=[""], **exact)
    return frame[list(columns)]


def findings_path(path: str) -> str:
    """Where the findings go beside a kernels file: `out.csv` -> `out-findings.csv`."""
    from pathlib import Path

    p = Path(path)
    return str(p.with_name(f"{p.stem}-findings{p.suffix}"))
