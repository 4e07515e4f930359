"""Parsers on broken input: a clear error naming file and line, never a crash.

Inputs are real fixture files cut short or overwritten, plus hand-written text in
tests/malformed/ (named as malformed; never used to make anything fire).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import kernel_dirs

from irscope.parsers.amdgcn_resources import parse_amd_resources
from irscope.parsers.cubin import parse_cubin
from irscope.model.errors import ArtifactError, decode_text
from irscope.parsers.metadata import parse_metadata

MALFORMED = Path(__file__).parent / "malformed"


def _artifact(manifest, ext: str, **where) -> Path:
    d = kernel_dirs(manifest, cache="caches/triton-3.6", **where)[0]
    return next(d.glob(f"*.{ext}"))


@pytest.mark.parametrize("cut", [0, 10, 63, 64, 200, 0.5, 0.9])
def test_truncated_cubin(manifest, cut):
    path = _artifact(manifest, "cubin", fixture="add", target_arch="sm_90")
    data = path.read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else cut
    with pytest.raises(ArtifactError) as err:
        parse_cubin(data[:n], str(path), "add_kernel")
    assert err.value.path == str(path)


def test_cubin_that_is_not_elf(manifest):
    with pytest.raises(ArtifactError, match="not an ELF"):
        parse_cubin(b"PK\x03\x04 a zip file", "x.cubin", "k")


def test_cubin_of_another_kernel(manifest):
    path = _artifact(manifest, "cubin", fixture="add", target_arch="sm_90")
    with pytest.raises(ArtifactError, match="no register count for kernel 'other'"):
        parse_cubin(path.read_bytes(), str(path), "other")


def test_truncated_amdgcn_keeps_what_it_has(manifest):
    path = _artifact(manifest, "amdgcn", fixture="add", target_arch="gfx942")
    text = path.read_text()
    cut = text[: text.index(".end_amdgpu_metadata")]
    cut = cut[: cut.index(".vgpr_count")]  # metadata cut before .vgpr_count
    res = parse_amd_resources(cut, str(path), "add_kernel")
    assert res.vgpr_total.origin.detail == "; TotalNumVgprs"  # falls back to the comment block
    with pytest.raises(ArtifactError, match="no register figures"):
        parse_amd_resources(text[:200], str(path), "add_kernel")


def test_amdgcn_metadata_value_not_an_integer():
    path = MALFORMED / "malformed_vgpr_count.amdgcn"
    with pytest.raises(ArtifactError) as err:
        parse_amd_resources(path.read_text(), str(path), "k")
    assert err.value.line == 6 and ".vgpr_count" in err.value.message


def test_binary_junk_names_the_line():
    with pytest.raises(ArtifactError) as err:
        decode_text(b"line one\nline two\n\xff\xfe junk", "f.ttgir")
    assert err.value.line == 3 and err.value.path == "f.ttgir"
    with pytest.raises(ArtifactError, match="NUL") as err:
        decode_text(b"a\nb\nc\x00", "f.ttgir")
    assert err.value.line == 3


def test_metadata_json_error_has_line_and_column():
    with pytest.raises(ArtifactError) as err:
        parse_metadata(b'{\n "name": "k",\n "num_warps": 4,,\n}', "k.json")
    assert err.value.line == 3 and "column" in err.value.message


# ---- the AMDGCN instruction parser ------------------------------------------------------------

@pytest.mark.parametrize("cut", [0.05, 0.3, 0.5, 0.77, 0.95])
def test_truncated_amdgcn_instruction_stream(manifest, cut):
    """A file cut anywhere parses what came before the cut and says nothing false."""
    from irscope.parsers.amdgcn import parse_amdgcn

    path = _artifact(manifest, "amdgcn", fixture="gemm_aligned", target_arch="gfx942")
    text = path.read_text()
    whole = parse_amdgcn(text, str(path)).functions[0]
    program = parse_amdgcn(text[: int(len(text) * cut)], str(path))
    assert len(program.functions) == 1
    kept = [i.text for i in program.functions[0].instructions]
    assert kept and len(kept) <= len(whole.instructions)
    # All but the last (which the cut may have split) are exactly the whole file's first ones.
    assert kept[:-1] == [i.text for i in whole.instructions[: len(kept) - 1]]


def test_unknown_amdgcn_lines_become_unparsed_nodes():
    from irscope.parsers.amdgcn import parse_amdgcn, read_metadata

    path = MALFORMED / "malformed_unknown_lines.amdgcn"
    program = parse_amdgcn(path.read_text(), str(path))
    assert [i.opcode for i in program.functions[0].instructions] == ["s_load_dwordx2", "s_endpgm"]
    assert [(u.line, u.in_code) for u in program.unparsed] == [(7, True), (8, True)]
    with pytest.raises(ArtifactError) as err:
        read_metadata(program)
    assert err.value.path == str(path) and err.value.line == 14
