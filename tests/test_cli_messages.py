"""What the command line says to a user who gets it wrong: help that shows the script form, --debug
anywhere, the nearest command or option to a typo, where the default cache was looked for, what a
what-if needs and what no hardware holds, --arch with PATH, and -j."""

from __future__ import annotations

import os

import json

import pytest
from conftest import FIXTURES

import irscope.pipeline.analyze
from irscope.cli.main import _parser, main
from irscope.occupancy.amd import AMD_ARCHES
from irscope.occupancy.nvidia import NVIDIA_ARCHES

CACHE = FIXTURES / "caches" / "triton-3.9"
GFX942_MATMUL = "6I2A3YXE*"  # matmul_kernel on gfx942: 160 VGPRs, 32 KiB LDS, 4 warps
SM90_ATTN = "TYTZUVIO*"


def usage_error(capsys, *argv: str) -> str:
    """stderr of a command argparse refuses (exit 2)."""
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    assert exited.value.code == 2
    return capsys.readouterr().err


def refused(capsys, *argv: str) -> str:
    """stderr of a command irscope refuses as a usage error (exit 2)."""
    assert main(list(argv)) == 2
    return capsys.readouterr().err


# -- 1: the script form in scan's help ----------------------------------------------------------
def test_scan_help_shows_the_script_form(capsys):
    with pytest.raises(SystemExit):
        main(["scan", "--help"])
    out = capsys.readouterr().out
    usage = out.split("\n\n")[0]
    assert "irscope scan [options] SCRIPT.py [-- ARGS ...]" in usage
    assert "--debug" in usage  # the usage line drawn by argparse is still whole
    positional = out.split("positional arguments:")[1].split("options:")[0]
    assert "SCRIPT.py [-- ARGS ...]" in " ".join(positional.split())


# -- 2: --debug before or after the command -----------------------------------------------------
REQUIRED = {"diff": ["a", "b"], "passes": ["dump.txt"], "explain": ["IRS101"]}


@pytest.mark.parametrize("command", sorted(_parser()._subparsers._group_actions[0].choices))
def test_debug_goes_before_or_after_every_command(command):
    rest = REQUIRED.get(command, [])
    assert _parser().parse_args([command, "--debug", *rest]).debug is True
    assert _parser().parse_args(["--debug", command, *rest]).debug is True  # not reset by the command
    assert _parser().parse_args([command, *rest]).debug is False


def test_debug_after_scan_shows_the_traceback(monkeypatch, capsys):
    def boom(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(irscope.pipeline.analyze, "scan", boom)
    monkeypatch.delenv("IRSCOPE_DEBUG", raising=False)
    assert main(["scan", str(CACHE)]) == 2
    assert "--debug shows the traceback" in capsys.readouterr().err
    with pytest.raises(RuntimeError):
        main(["scan", "--debug", str(CACHE)])
    assert "IRSCOPE_DEBUG" not in os.environ  # set for worker processes while main ran, then restored


# -- 3: the nearest command, option or choice ---------------------------------------------------
@pytest.mark.parametrize("argv,hint", [
    (["scna"], "did you mean 'scan'?"),
    (["ocupancy"], "did you mean 'occupancy'?"),
    (["scan", "--sarfi", "x"], "--sarfi (did you mean --sarif?)"),
    (["scan", "--sarfi=x", "y"], "--sarfi=x (did you mean --sarif?)"),
    (["diff", "a", "b", "--stage", "ttgri"], "did you mean 'ttgir'?"),
    (["scan", "--fail-on", "eror"], "did you mean 'error'?"),
    (["runs", "lsit"], "did you mean 'list'?"),
    (["occupancy", "--vgpr", "8", "--arch", "gfx942"], None),  # an unambiguous prefix is argparse's own
])
def test_a_typo_names_the_nearest(capsys, argv, hint):
    if hint is None:
        assert main(argv) == 2  # parsed: the what-if then lacks --warps
        assert "give --warps N" in capsys.readouterr().err
        return
    err = usage_error(capsys, *argv)
    assert hint in err
    assert "maybe you meant" not in err  # Python 3.14's own wording never shows: one message on every Python


def test_a_word_near_nothing_gets_no_guess(capsys):
    err = usage_error(capsys, "frobnicate")
    assert "invalid choice: 'frobnicate'" in err and "did you mean" not in err
    assert "choose from scan, diff" in err


# -- 4: scan without PATH and without a cache ---------------------------------------------------
def test_scan_without_a_cache_says_where_it_looked(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "absent"))
    err = refused(capsys, "scan")
    assert f"$TRITON_CACHE_DIR is {tmp_path / 'absent'}, which does not exist" in err
    assert "Give a PATH: `irscope scan DIR`" in err and "irscope scan SCRIPT.py" in err


@pytest.mark.parametrize("command", ["scan", "baseline"])
def test_without_triton_variables_it_names_the_home_cache(capsys, monkeypatch, tmp_path, command):
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    err = refused(capsys, command)
    assert "$TRITON_CACHE_DIR is not set, nor $TRITON_HOME" in err
    assert f"~/.triton/cache ({tmp_path / '.triton' / 'cache'}) does not exist" in err
    assert f"`irscope {command} DIR`" in err


# -- 5: a what-if without its numbers -----------------------------------------------------------
@pytest.mark.parametrize("arch,flags", [("gfx942", ["--vgprs N", "--warps N", "--lds N", "--sgprs N"]),
                                        ("sm_90", ["--registers N", "--warps N", "--shared N", "--barriers N"])])
def test_a_what_if_without_numbers_names_the_flags(capsys, arch, flags):
    err = refused(capsys, "occupancy", "--arch", arch)
    assert f"occupancy --arch {arch} with no numbers: give {flags[0]} and {flags[1]}" in err
    assert all(f in err for f in flags)


# -- 6: what no hardware holds ------------------------------------------------------------------
@pytest.mark.parametrize("argv,message", [
    (["--arch", "gfx942", "--vgprs", "600", "--warps", "4"], "--vgprs 600: gfx942 has at most 512 VGPRs per wave"),
    (["--arch", "gfx1100", "--vgprs", "300", "--warps", "4"], "--vgprs 300: gfx1100 has at most 256 VGPRs per wave"),
    (["--arch", "gfx942", "--vgprs", "8", "--warps", "4", "--sgprs", "200"], "--sgprs 200: gfx942 has at most 108"),
    (["--arch", "gfx942", "--vgprs", "8", "--warps", "4", "--lds", "65537"],
     "--lds 65537: gfx942 has at most 65536 bytes of LDS per workgroup"),
    (["--arch", "sm_90", "--registers", "300", "--warps", "4"], "--registers 300: sm_90 has at most 255 registers"),
    (["--arch", "sm_90", "--registers", "8", "--warps", "4", "--shared", "300000"],
     "--shared 300000: sm_90 has at most 232448 bytes of dynamic shared memory per block"),
    (["--arch", "sm_80", "--registers", "8", "--warps", "4", "--static-shared", "50000"],
     "--static-shared 50000: sm_80 has at most 49152 bytes of static shared memory"),
    (["--arch", "sm_80", "--registers", "8", "--warps", "4", "--barriers", "17"],
     "--barriers 17: sm_80 has at most 16 named barriers per block"),
    (["--arch", "gfx942", "--vgprs", "8", "--warps", "3"], "--warps 3: num_warps on gfx942 is one of 1, 2, 4, 8, 16 "),
    (["--arch", "gfx942", "--vgprs", "8", "--warps", "32"], "one of 1, 2, 4, 8, 16 (a power of two"),
    (["--arch", "sm_90", "--vgprs", "8", "--warps", "4"], "--vgprs: not a number sm_90 reads (AMD's)"),
])
def test_an_impossible_what_if_names_the_limit(capsys, argv, message):
    assert message in refused(capsys, "occupancy", *argv)


def test_the_limits_are_the_tables(capsys):
    for name, arch in AMD_ARCHES.items():  # at the limit it is computed, one above it is refused
        assert main(["occupancy", "--arch", name, "--vgprs", str(arch.max_vgprs_per_wave), "--warps", "1",
                     "--lds", str(arch.max_lds_per_workgroup)]) == 0
        err = refused(capsys, "occupancy", "--arch", name, "--vgprs", str(arch.max_vgprs_per_wave + 1),
                      "--warps", "1")
        assert f"at most {arch.max_vgprs_per_wave} VGPRs" in err
    for name, arch in NVIDIA_ARCHES.items():
        assert main(["occupancy", "--arch", name, "--registers", "255", "--warps", "32",
                     "--shared", str(arch.shared_optin)]) == 0
        err = refused(capsys, "occupancy", "--arch", name, "--registers", "8", "--warps", "4",
                      "--shared", str(arch.shared_optin + 1))
        assert f"at most {arch.shared_optin} bytes" in err


def test_a_negative_or_non_number_is_refused(capsys):
    assert "argument --vgprs: -3 is negative" in usage_error(capsys, "occupancy", "--arch", "gfx942", "--vgprs", "-3")
    assert "argument --lds: 'lots' is not a number" in usage_error(capsys, "occupancy", "--lds", "lots")


def test_an_impossible_what_if_on_harvested_kernels_is_refused(capsys):
    err = refused(capsys, "occupancy", str(CACHE), "--kernel", GFX942_MATMUL, "--vgprs", "1000")
    assert "--vgprs 1000: gfx942 has at most 512 VGPRs per wave" in err


# -- 7: --arch with PATH ------------------------------------------------------------------------
def test_arch_with_path_places_the_kernel_on_that_arch(capsys):
    assert main(["occupancy", str(CACHE), "--kernel", GFX942_MATMUL]) == 0
    own = capsys.readouterr().out
    assert "2 of 8 waves/SIMD" in own and "on gfx942" in own and "LLVM's" in own
    assert main(["occupancy", str(CACHE), "--kernel", GFX942_MATMUL, "--arch", "gfx950"]) == 0
    moved = " ".join(capsys.readouterr().out.split())
    assert "3 of 8 waves/SIMD" in moved and "on gfx950" in moved  # gfx950's 160 KiB LDS fits more workgroups
    assert "--arch gfx950: the numbers compiled for gfx942, placed on gfx950" in moved
    assert "LLVM's" not in moved  # its comment is about gfx942


def test_arch_with_path_works_on_nvidia_too(capsys):
    assert main(["occupancy", str(CACHE), "--kernel", SM90_ATTN, "--arch", "sm_80", "--json"]) == 0
    assert '"arch": "sm_80"' in capsys.readouterr().out


@pytest.mark.parametrize("arch", ["sm_90", "gfx1100"])  # another vendor; another wave size
def test_arch_with_path_refuses_what_does_not_carry_over(capsys, arch):
    err = refused(capsys, "occupancy", str(CACHE), "--kernel", GFX942_MATMUL, "--arch", arch)
    assert f"--arch {arch}: matmul_kernel (6I2A3YXE" in err and "was compiled for gfx942" in err
    assert "--kernel" in err and f"--target {arch}" in err


def test_scan_target_with_a_cache_is_refused(capsys):
    assert "go with a script" in refused(capsys, "scan", str(CACHE), "--target", "gfx942")


# -- 8: -j --------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["scan"], ["diff", "a", "b"], ["tui"], ["baseline"]])
def test_jobs_needs_a_number_of_one_or_more(capsys, command):
    assert "-j needs a number of worker processes, not 'abc'" in usage_error(capsys, *command, "-j", "abc")
    for bad in ("0", "-2"):
        assert f"-j {bad}: give 1 or more worker processes" in usage_error(capsys, *command, "-j", bad)


def test_with_path_each_kernel_reads_its_own_vendors_flags(capsys):
    """A cache holds both vendors: --vgprs changes the AMD kernels and leaves the NVIDIA ones their own."""
    assert main(["occupancy", str(CACHE), "--kernel", "add_kernel", "--vgprs", "128", "--json"]) == 0
    rows = {r["occupancy"]["arch"]: r for r in json.loads(capsys.readouterr().out)}
    assert {"gfx942", "sm_90"} <= set(rows)
    assert any(i["name"] == "vgprs" and i["value"] == 128 for i in rows["gfx942"]["inputs"])
    assert not any(i["name"] == "vgprs" for i in rows["sm_90"]["inputs"])
