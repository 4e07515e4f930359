"""A reader for Nsight Compute's raw CSV (`ncu --csv --page raw --log-file FILE --metrics ...`), as
`irscope scan script.py --profile=counters` writes it (irscope/pipeline/runner.py).

The file holds the profiled process's `==PROF==` lines, then a header row (`"ID","Process ID",...,"Kernel
Name",...` and one column per metric), a units row, and one row per profiled kernel launch in launch
order. Numbers are written with thousands separators (`"4,211,456"`, `"12.50"`). The file is written
while the script runs: every row is checked, and a file without the header raises ArtifactError.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from irscope.model.errors import ArtifactError
from irscope.model.artifact_reader import read_measurement

# What --profile=counters asks Nsight Compute for (its metric names; docs/profile.md says what each is).
METRICS = (
    "sm__maximum_warps_avg_per_active_cycle",  # theoretical occupancy, warps per SM
    "sm__maximum_warps_per_active_cycle_pct",  # the same, % of the SM's warps
    "sm__warps_active.avg.pct_of_peak_sustained_active",  # achieved occupancy, %
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks",  # blocks per SM each resource allows
    "launch__registers_per_thread", "dram__bytes.sum", "smsp__inst_executed.sum", "gpu__time_duration.sum",
)
MAX_BYTES = 256 * 1024 * 1024
MAX_ROWS = 1_000_000


@dataclass(frozen=True)
class CounterRow:
    """One profiled launch: its number in the file (`ID`), kernel name, metrics by name, and its CSV line."""

    id: int
    name: str
    values: dict[str, float]
    line: int


def read_ncu_csv(path: str) -> tuple[CounterRow, ...]:
    raw = read_measurement(path, MAX_BYTES, "Nsight Compute's counters")
    lines = raw.decode("utf-8", errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        errors = [line for line in lines if line.startswith("==ERROR==") or line.startswith("==WARNING==")]
        why = f": {errors[0][:300]}" if errors else ""
        raise ArtifactError(path, f"not Nsight Compute's raw CSV: no header row (\"ID\",...){why}")
    reader = csv.reader(lines[start:])
    header = next(reader)
    next(reader, None)  # the units row
    try:
        id_at, name_at = header.index("ID"), header.index("Kernel Name")
    except ValueError:
        raise ArtifactError(path, "not Nsight Compute's raw CSV: no \"ID\" or \"Kernel Name\" column",
                            start + 1) from None
    wanted = [(i, h) for i, h in enumerate(header) if h in METRICS]
    rows = []
    for offset, row in enumerate(reader):
        if len(rows) >= MAX_ROWS:
            raise ArtifactError(path, f"more than {MAX_ROWS:,} profiled launches")
        if len(row) != len(header) or not row[id_at].isdigit():
            continue  # a row cut short by a killed process, or a line the script printed
        values = {h: v for i, h in wanted if (v := _number(row[i])) is not None}
        rows.append(CounterRow(int(row[id_at]), row[name_at][:500], values, start + 3 + offset))
    return tuple(rows)


def _number(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if value == value and abs(value) < 1e30 else None
