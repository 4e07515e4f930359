"""NVIDIA occupancy against what an H100 answered.

tests/data/nvidia_occupancy_h100.csv.gz was measured by tools/measure_nvidia_occupancy.py on
an H100 (driver 580.159, CUDA 13.0; tests/data/nvidia_occupancy_h100_device.json): the
runtime's cudaOccupancyMaxActiveBlocksPerMultiprocessor and the driver's
cuOccupancyMaxActiveBlocksPerMultiprocessor, for every sm_90 fixture kernel loaded the way
Triton's launcher loads it, and for a sweep of driver-JIT-compiled probe kernels over
registers, static shared, named barriers, block size and dynamic shared memory.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections import Counter
from pathlib import Path

import pytest

import irscope
from irscope.occupancy.nvidia import NVIDIA_ARCHES, nvidia_arch, nvidia_occupancy
from irscope.parsers.cubin import parse_cubin

DATA = Path(__file__).parent / "data"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SM90 = NVIDIA_ARCHES["sm_90"]


def measured_rows() -> list[dict[str, str]]:
    text = gzip.decompress((DATA / "nvidia_occupancy_h100.csv.gz").read_bytes()).decode()
    return list(csv.DictReader(io.StringIO(text)))


ROWS = measured_rows()
SWEEP = [r for r in ROWS if r["source"] == "sweep"]
FIXTURE_ROWS = [r for r in ROWS if r["source"] == "fixture"]


def calculated(row: dict[str, str]):
    return nvidia_occupancy(
        SM90, int(row["registers"]), int(row["threads"]), int(row["dynamic_shared"]), int(row["static_shared"]),
        int(row["max_dynamic_set"]) if row["max_dynamic_set"] else None,
        int(row["barriers"]) if row["barriers"] else 1)


def test_the_measurement_is_large_and_both_apis_agree():
    assert len(SWEEP) >= 2000
    assert len(FIXTURE_ROWS) == 34  # every sm_90 kernel in fixtures/manifest.json
    assert all(r["runtime_blocks"] == r["driver_blocks"] for r in ROWS)
    assert all(int(r["driver_blocks"]) >= 0 for r in ROWS)  # no API call failed


def test_every_sweep_configuration_matches_the_h100():
    wrong = [(r, calculated(r)) for r in SWEEP if calculated(r).groups != int(r["driver_blocks"])]
    assert not wrong, f"{len(wrong)} of {len(SWEEP)} differ, first: {wrong[0]}"


def test_the_sweep_exercises_every_limit_alone():
    alone = Counter(calculated(r).limiters for r in SWEEP if calculated(r).groups > 0)
    for resource in ("registers", "shared", "warps", "barriers", "blocks"):
        assert alone[(resource,)] > 0, resource
    assert any(calculated(r).groups == 0 for r in SWEEP)  # configurations that cannot launch at all


@pytest.fixture(scope="module")
def fixture_reports():
    report = irscope.scan(FIXTURES)
    return {str(Path(k.kernel.directory).relative_to(FIXTURES)) + "/" + k.kernel.name: k for k in report.kernels}


@pytest.mark.parametrize("row", FIXTURE_ROWS, ids=lambda r: r["kernel"].split("/")[-1] + "-" + r["kernel"][7:17])
def test_fixture_kernel_occupancy_matches_the_h100(row, fixture_reports):
    kr = fixture_reports[row["kernel"]]
    res = kr.resources
    # The cubin figures irscope reads are the driver's: registers, and static shared without
    # the 1 KiB that sm_90 cubins keep at the start of `.nv.shared.<kernel>`.
    assert res.registers.value == int(row["registers"])
    assert res.static_shared.value == int(row["static_shared"])
    occ = kr.occupancy
    assert occ.input("shared") == int(row["dynamic_shared"])
    assert occ.input("warps") * 32 == int(row["threads"])
    assert occ.occupancy.groups == int(row["driver_blocks"])
    assert occ.occupancy.active == int(row["driver_blocks"]) * int(row["threads"]) // 32


def test_worked_example_sm90():
    """occupancy.md §2.4: 128 registers, 4 warps, 96 KiB dynamic: 2 blocks, 8 warps, 12.5 %."""
    occ = nvidia_occupancy(SM90, 128, 128, 96 * 1024, 0, SM90.shared_optin)
    assert (occ.groups, occ.active, occ.limiters) == (2, 8, ("shared",))
    assert occ.fraction == 0.125
    a100 = NVIDIA_ARCHES["sm_80"]
    assert nvidia_occupancy(a100, 128, 128, 96 * 1024, 0, a100.shared_optin).groups == 1


def test_registers_are_floored_per_sub_partition():
    """80 registers x 32 threads: 65536 / 2560 = 25.6, but each quarter of the file holds
    16384 // 2560 = 6 warps, so 24 blocks (the H100 agreed)."""
    assert nvidia_occupancy(SM90, 80, 32).groups == 24


def test_without_the_opt_in_more_than_48_kib_cannot_launch():
    assert nvidia_occupancy(SM90, 32, 128, 64 * 1024).groups == 0
    assert nvidia_occupancy(SM90, 32, 128, 64 * 1024, 0, SM90.shared_optin).groups == 3


@pytest.mark.parametrize("name,row", [("sm_90a", "sm_90"), ("sm_100a", "sm_100"), ("90", "sm_90"),
                                      ("sm_120", "sm_120"), ("sm_75", None), ("gfx942", None)])
def test_arch_names(name, row):
    arch = nvidia_arch(name)
    assert (arch.name if arch else None) == row


def cubins(version: str) -> list[Path]:
    return sorted((FIXTURES / "caches" / f"triton-{version}").glob("*/softmax_kernel.cubin"))


@pytest.mark.parametrize("version,detail", [("3.6", "flags bits 20-26"), ("3.9", "EIATTR_NUM_BARRIERS")])
def test_barriers_from_either_elf_layout(version, detail):
    """CUDA 12 cubins keep the barrier count in the .text section flags; CUDA 13 cubins
    (Triton 3.9) in `.nv.info.<kernel>`. Softmax synchronises its warps with one barrier."""
    path = next(p for p in cubins(version) if parse_cubin(p.read_bytes(), str(p), "softmax_kernel")["sm"].value == 90)
    facts = parse_cubin(path.read_bytes(), str(path), "softmax_kernel")
    assert facts["barriers"].value == 1
    assert detail in facts["barriers"].origin.detail
