"""`irscope occupancy` and the occupancy columns of `irscope scan`, as a user runs them."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from irscope.cli.main import main

GEMM_NW16 = FIXTURES / "caches" / "triton-3.9" / "R77ETAE2Z26NZ7O4LHAAOUJ75XA6OLYD5URJO6GMNTY4F2W3DBFQ"
KERNEL_DUMP_GEMM = FIXTURES / "kernel_dump" / "D755NAIOTUYVSEWNNSXXGZ7IMWSYQTEGFJ5FNDQLBIIYACLVLDYQ"


def occupancy(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["occupancy", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_what_if_the_guides_example(capsys):
    code, out, _ = occupancy(capsys, "--arch", "gfx942", "--vgprs", "170", "--warps", "4")
    assert code == 0
    assert "2 of 8 waves/SIMD" in out and "limited by          vgpr" in out
    assert "use at most 168 VGPRs (now 170): 3 waves/SIMD; ask with waves_per_eu=3" in out
    code, out, _ = occupancy(capsys, "--arch", "gfx942", "--vgprs", "168", "--warps", "4")
    assert "3 of 8 waves/SIMD" in out


def test_what_if_with_lds_and_eight_warps(capsys):
    code, out, _ = occupancy(capsys, "--arch", "gfx942", "--vgprs", "170", "--lds", "32768", "--warps", "8")
    assert code == 0
    assert "2 of 8 waves/SIMD (25%): 1 workgroup(s) per CU" in out
    assert "lds = 32,768  what-if" in out


def test_what_if_nvidia(capsys):
    code, out, _ = occupancy(capsys, "--arch", "sm_90a", "--registers", "128", "--shared", "98304", "--warps", "4")
    assert code == 0
    assert "8 of 64 warps/SM (12%): 2 block(s) per SM on sm_90" in out
    assert "cut dynamic shared memory to 76800 bytes" in out


@pytest.mark.parametrize("args,message", [
    ([], "give a PATH"),
    (["--arch", "gfx1030", "--vgprs", "10", "--warps", "4"], "no occupancy table for gfx1030"),
    (["--arch", "gfx942", "--warps", "4"], "give --vgprs N"),
    (["--arch", "gfx942", "--vgprs", "64", "--warps", "32"], "num_warps on gfx942 is one of 1, 2, 4, 8, 16"),
])
def test_what_if_mistakes_are_usage_errors(capsys, args, message):
    code, _, err = occupancy(capsys, *args)
    assert code == 2 and message in err


def test_a_harvested_kernel_shows_inputs_notes_and_steps(capsys):
    code, out, _ = occupancy(capsys, str(GEMM_NW16))
    assert code == 0
    assert "4 of 8 waves/SIMD" in out
    assert "matmul_kernel.amdgcn:" in out and "(.vgpr_count)" in out  # where 71 came from
    assert "7 x 4 SIMDs = 28 wave slots hold 1 workgroup(s)" in out
    assert "use at most 64 VGPRs (now 71): 8 waves/SIMD" in out


def test_what_if_on_a_harvested_kernel_replaces_one_input(capsys):
    code, out, _ = occupancy(capsys, str(GEMM_NW16), "--vgprs", "64")
    assert code == 0
    assert "vgprs = 64  what-if" in out and "8 of 8 waves/SIMD" in out
    assert "sgprs = 30" in out  # the kernel's own, with its line


def test_kernel_filter_and_json(capsys):
    code, out, _ = occupancy(capsys, str(FIXTURES / "caches" / "triton-3.9"), "--kernel", "softmax*", "--json")
    assert code == 0
    results = json.loads(out)
    assert results and all(r["kernel"] == "softmax_kernel" and r["key"] for r in results)
    assert {r["occupancy"]["unit"] for r in results} == {"waves/SIMD", "warps/SM"}
    for r in results:
        assert {i["name"] for i in r["inputs"]} >= {"warps"}
        assert all(i["origin"]["path"].endswith((".json", ".amdgcn", ".cubin")) for i in r["inputs"])


def test_kernel_dump_needs_the_lds_from_the_user(capsys):
    code, _, err = occupancy(capsys, str(KERNEL_DUMP_GEMM))
    assert code == 2 and "--lds" in err
    code, out, _ = occupancy(capsys, str(KERNEL_DUMP_GEMM), "--lds", "32768")
    assert code == 0 and "lds = 32,768  what-if" in out


def test_no_matching_kernel(capsys):
    code, _, err = occupancy(capsys, str(GEMM_NW16), "--kernel", "nothing*")
    assert code == 2 and "no kernel matching nothing*" in err


def test_scan_table_has_occupancy_and_the_step(capsys):
    assert main(["scan", str(GEMM_NW16)]) == 0
    out = capsys.readouterr().out
    assert "occupancy" in out and "to gain" in out
    assert "4/8 vgpr" in out and "VGPR<=64: 8" in out
