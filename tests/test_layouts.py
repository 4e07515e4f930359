"""Layout encodings, their linear layouts, and how convert_layout moves data.

Every layout here is read from real TTGIR in fixtures/ (or, where marked, from Triton's own
tests). The little reader below turns `#name = #ttg.blocked<{...}>` lines into the parameter
dicts the MLIR parser hands to `build_layout`, so these tests do not depend on that parser.
"""

from __future__ import annotations

import copy
import gzip
import re
from functools import cache
from pathlib import Path

import pytest
from conftest import FIXTURES

from irscope.ir.layouts.conversion import classify_conversion
from irscope.ir.layouts.encodings import (
    AmdMfma,
    AmdWmma,
    Blocked,
    DotOperand,
    Layout,
    Linear,
    NvidiaMma,
    PaddedShared,
    SharedMemory,
    Slice,
    SwizzledShared,
    UnknownLayout,
)
from irscope.ir.layouts.linear import LinearLayout
from irscope.ir.layouts.params import build_layout
from irscope.ir.layouts.to_linear import to_linear

TTGIR = sorted(FIXTURES.rglob("*.ttgir"))

# -- a tiny reader for attribute aliases ----------------------------------------------------------

# #blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
_ALIAS = re.compile(r"^#(?P<name>\w+) = (?P<value>#(?!loc\b)[\w.]+(?:<.*>)?)$", re.MULTILINE)
_TOKEN = re.compile(r"\s*(?:(?P<int>-?\d+)|(?P<ref>#\w+)(?![.\w])|(?P<word>[A-Za-z_][\w.]*)|(?P<punct>[\[\]{}=,:<>]))")


class AliasReader:
    """Reads the `#alias = #dialect.mnemonic<{...}>` lines of one TTGIR file."""

    def __init__(self, text: str) -> None:
        self.text = {m["name"]: m["value"] for m in _ALIAS.finditer(_strip_locs(text))}
        self.built: dict[str, Layout] = {}

    def alias(self, name: str) -> Layout:
        if name not in self.built:
            self.built[name] = self.attribute(self.text[name])
        return self.built[name]

    def attribute(self, text: str) -> Layout:
        m = re.match(r"#([\w.]+)", text)
        body = text[m.end():]
        params = None
        if body.startswith("<{") and body.endswith("}>"):
            tokens = [t for t in _TOKEN.finditer(body[1:-1])]
            params, _ = self._value(tokens, 0)
        return build_layout(m.group(1), params, text)

    def _value(self, tokens: list, i: int) -> tuple[object, int]:
        t = tokens[i]
        if t["int"]:
            if i + 2 < len(tokens) and tokens[i + 1]["punct"] == ":":  # `16 : i32`
                return int(t["int"]), i + 3
            return int(t["int"]), i + 1
        if t["ref"]:
            return self.alias(t["ref"][1:]), i + 1
        if t["word"]:
            return {"true": True, "false": False}.get(t["word"], t["word"]), i + 1
        close = {"[": "]", "{": "}"}[t["punct"]]
        items: list = []
        entries: dict = {}
        i += 1
        while tokens[i]["punct"] != close:
            if close == "}":
                key = tokens[i]["word"]
                entries[key], i = self._value(tokens, i + 2)  # skip `key =`
            else:
                value, i = self._value(tokens, i)
                items.append(value)
            if tokens[i]["punct"] == ",":
                i += 1
        return (entries if close == "}" else tuple(items)), i + 1


def _strip_locs(text: str) -> str:
    return re.sub(r" loc\(.*\)$", "", text, flags=re.MULTILINE)


@cache
def reader(path: Path) -> AliasReader:
    return AliasReader(path.read_text())


# %2 = ttg.convert_layout %1 : tensor<64x64xf16, #blocked> -> tensor<64x64xf16, #blocked1> loc(#loc5)
_CVT = re.compile(r"convert_layout %\S+(?: \{[^}]*\})? : tensor<(?P<shape>(?:\d+x)+)(?P<elem>[^,]+), (?P<src>.+?)> -> "
                  r"tensor<(?:\d+x)+[^,]+, (?P<dst>.+?)>(?: loc\(.*\))?$")


def version_of(path: Path) -> str:
    m = re.search(r"triton-(\d+\.\d+)", str(path))
    return m.group(1) if m else "3.6"  # before_after/ and kernel_dump/ hold Triton 3.6 output


def encoding(r: AliasReader, text: str) -> Layout:
    return r.alias(text[1:]) if re.fullmatch(r"#\w+", text) else r.attribute(text)


def fixture_conversions():
    """(path, version, shape, element type, src, dst) of every convert_layout in the fixtures."""
    for path in TTGIR:
        for line in path.read_text().splitlines():
            m = _CVT.search(line.strip())
            if m:
                r = reader(path)
                shape = tuple(int(d) for d in m["shape"][:-1].split("x"))
                yield path, version_of(path), shape, m["elem"], encoding(r, m["src"]), encoding(r, m["dst"])


def alias_in(fragment: str, name: str = "mma") -> tuple[Path, Layout]:
    """The first fixture file whose text contains `fragment`, and its alias `name`."""
    for path in TTGIR:
        if fragment in path.read_text():
            return path, reader(path).alias(name)
    raise AssertionError(f"no fixture contains {fragment!r}")


# -- building layouts -------------------------------------------------------------------------------


def test_the_fixture_corpus_is_there():
    assert len(TTGIR) >= 100, "fixtures/ should hold the 118 TTGIR files of the corpus"


@pytest.mark.parametrize("path", TTGIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_alias_builds_into_a_known_layout(path):
    r = reader(path)
    assert r.text, "every TTGIR has at least one layout alias"
    for name in r.text:
        layout = r.alias(name)
        assert not isinstance(layout, UnknownLayout), f"#{name}: {layout}"
        assert layout.summary()
        twin = copy.copy(layout)  # a value: equal to a copy and hashed alike (the layout graph keys on it)
        assert twin is not layout and twin == layout and hash(twin) == hash(layout)


def test_all_encoding_families_of_the_corpus_are_seen():
    kinds = {type(reader(p).alias(n)) for p in TTGIR for n in reader(p).text}
    assert {Blocked, AmdMfma, NvidiaMma, Linear, SwizzledShared, PaddedShared, SharedMemory} <= kinds


def test_inline_slice_and_dot_op_encodings_build():
    # The dot_op form appears only inline, e.g. fixtures/caches/triton-3.2/*/attn_fwd_kernel.ttgir:
    #   tensor<128x64xf16, #triton_gpu.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>>
    seen = {Slice: 0, DotOperand: 0}
    for *_, src, dst in fixture_conversions():
        for layout in (src, dst):
            if type(layout) in seen:
                seen[type(layout)] += 1
                assert layout.parent.known
    assert seen[Slice] and seen[DotOperand]


def test_old_and_new_mfma_spellings():
    # fixtures/caches/triton-3.0/*/matmul_kernel.ttgir (hip):
    # #mma = #triton_gpu.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2],
    #                               instrShape = [32, 32], isTransposed = false}>
    _, old = alias_in("#triton_gpu.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], "
                      "instrShape = [32, 32], isTransposed = false}>")
    assert (old.version, old.version_minor, old.instr_shape, old.k_dim) == (3, 0, (32, 32), None)
    assert not old.is_transposed and old.summary() == "mfma.v3[32x32|w2,2]"
    # 3.9 gfx950: #mma = #ttg.amd_mfma<{version = 4, ..., instrShape = [32, 32, 16], isTransposed = true}>
    _, new = alias_in("#ttg.amd_mfma<{version = 4, warpsPerCTA = [2, 2], instrShape = [32, 32, 16]")
    assert (new.version, new.version_minor, new.k_dim, new.is_transposed) == (4, None, 16, True)


def test_shared_encodings_across_versions():
    # 3.0-3.2 `#triton_gpu.shared<{..., hasLeadingOffset = true}>` is NVIDIA's MMA swizzle (sm_90).
    _, lead = alias_in("hasLeadingOffset = true", "shared")
    assert isinstance(lead, SwizzledShared) and lead.has_leading_offset and lead.is_shared
    assert not lead.is_distributed
    _, padded = alias_in("#ttg.padded_shared<[512:+8]", "shared")
    assert padded.intervals == ((512, 8),) and len(padded.offset_bases) == 13 and padded.block_bases == ()
    _, smem = alias_in("#smem = #ttg.shared_memory", "smem")
    assert smem == SharedMemory() and smem.name == "shared_memory"


@pytest.mark.parametrize("name, params, why", [
    ("ttg.blocked", {"sizePerThread": (1, 8), "threadsPerWarp": (8, 8), "warpsPerCTA": (4, 1)}, "order"),
    ("ttg.blocked", {"sizePerThread": (1,), "threadsPerWarp": (8, 8), "warpsPerCTA": (4, 1), "order": (1, 0)},
     "sizePerThread has 1 entries"),
    ("ttg.blocked", {"sizePerThread": (1, 8), "threadsPerWarp": (8, 8), "warpsPerCTA": (4, 1), "order": (1, 1)},
     "not a permutation"),
    ("ttg.amd_mfma", {"version": "3", "warpsPerCTA": (2, 2), "instrShape": (32, 32), "isTransposed": True},
     "version"),
    ("ttg.amd_mfma", {"version": 3, "warpsPerCTA": (2, 2), "instrShape": (32,), "isTransposed": True},
     "instrShape"),
    ("ttg.slice", {"dim": 0, "parent": "#blocked"}, "parent"),
    ("ttg.dot_op", {"opIdx": 2, "parent": SharedMemory()}, "opIdx"),
    ("ttg.linear", {"register": ((0, 1),), "lane": ((1,),), "warp": ()}, "ranks"),
    ("ttg.swizzled_shared", None, "body"),
    ("ttg.nvmma_shared", {"swizzlingByteWidth": 128, "transposed": object(), "elementBitWidth": 16}, "transposed"),
])
def test_bad_parameters_give_an_unknown_layout_with_a_reason(name, params, why):
    layout = build_layout(name, params, f"#{name}<...>")
    assert isinstance(layout, UnknownLayout)
    assert why in layout.reason and layout.name == name and layout.raw == f"#{name}<...>"


def test_unknown_encodings_keep_name_params_and_text():
    raw = "#ttng.tensor_memory_encoding<{blockM = 128, blockN = 128, colStride = 1 : i32}>"
    layout = build_layout("ttng.tensor_memory_encoding", {"blockM": 128, "blockN": 128, "colStride": 1}, raw)
    assert isinstance(layout, UnknownLayout) and not layout.known
    assert (layout.name, layout.raw, layout.params["blockN"]) == ("ttng.tensor_memory_encoding", raw, 128)
    assert layout.summary() == "ttng.tensor_memory_encoding?"
    assert build_layout("foo.blocked", {}, "#foo.blocked<{}>").name == "foo.blocked"


def test_newer_parameters_are_kept_not_dropped():
    # Triton 3.9 WMMA (AMD test IR): warps as bases, and a CGALayout irscope does not model.
    params = {"version": 3, "isTranspose": True, "ctaLayout": {"warp": ((0, 1), (1, 0))},
              "CGALayout": ((1, 0), (0, 1)), "instrShape": (16, 16, 32)}
    wmma = build_layout("ttg.amd_wmma", params, "#ttg.amd_wmma<{...}>")
    assert isinstance(wmma, AmdWmma) and wmma.warp_bases == ((0, 1), (1, 0))
    assert wmma.extras == (("CGALayout", ((1, 0), (0, 1))),)
    assert to_linear(wmma, (64, 64)) is None  # irscope does not model WMMA linear layouts


def test_build_layout_never_raises_on_odd_input():
    for params in (None, {}, {"order": None}, {"dim": 1, "parent": None}, {"version": object()}):
        for name in ("ttg.blocked", "ttg.slice", "ttg.amd_mfma", "triton_gpu.shared", "ttg.padded_shared", "x"):
            assert isinstance(build_layout(name, params, "#garbage<[1:+]"), Layout)


# -- linear layouts ---------------------------------------------------------------------------------


def test_blocked_from_a_real_gemm_tile():
    # fixtures/before_after/before/*/tile_copy_kernel.ttgir (3.6, gfx942), on tensor<64x64xf16>:
    # #blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
    _, blocked = alias_in("#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], "
                          "warpsPerCTA = [4, 1], order = [1, 0]}>", "blocked")
    ll = to_linear(blocked, (64, 64))
    # 8 contiguous columns per thread; lanes fill a row of 64 then go down; 4 warps of 8 rows
    # cover 32 rows, so the rest repeats in registers along dim0.
    assert ll.basis("register") == ((0, 1), (0, 2), (0, 4), (32, 0))
    assert ll.basis("lane") == ((0, 8), (0, 16), (0, 32), (1, 0), (2, 0), (4, 0))
    assert ll.basis("warp") == ((8, 0), (16, 0))
    assert ll.apply(register=3, lane=9, warp=2) == (16 + 1, 8 + 3)
    assert ll.covers_bijectively()


def fixture_blocked() -> list[Blocked]:
    return sorted({reader(p).alias(n) for p in TTGIR for n in reader(p).text
                   if isinstance(reader(p).alias(n), Blocked)}, key=lambda b: b.summary())


@pytest.mark.parametrize("blocked", fixture_blocked(), ids=lambda b: b.summary())
def test_blocked_covers_each_element_once_when_it_tiles_the_shape(blocked):
    tile = tuple(s * t * w for s, t, w in zip(blocked.size_per_thread, blocked.threads_per_warp,
                                              blocked.warps_per_cta))
    for shape in (tile, tuple(2 * d for d in tile)):
        ll = to_linear(blocked, shape)
        assert ll.shape == shape and ll.covers_bijectively()
        assert all(any(b) for _, bases in ll.bases for b in bases), "an exact tiling broadcasts nothing"
        held = {ll.apply(register=r, lane=ln, warp=w) for r in range(ll.in_size("register"))
                for ln in range(ll.in_size("lane")) for w in range(ll.in_size("warp"))}
        assert len(held) == _product(shape)
    # A tensor smaller than the tile: still every element, but the most major bases now hold
    # nothing new (broadcast, 0), one per halving.
    half = tuple(max(1, d // 2) for d in tile)
    small = to_linear(blocked, half)
    zeros = sum(1 for _, bases in small.bases for b in bases if not any(b))
    assert small.covers_bijectively() and 2 ** zeros == _product(tile) // _product(half)


def _product(shape) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


@pytest.mark.parametrize("fragment, transposed, m", [
    # fixtures/caches/triton-3.0/*/matmul_kernel.ttgir (hip)
    (("#triton_gpu.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [32, 32], "
      "isTransposed = false}>"), False, 32),
    # fixtures/caches/triton-3.2/*/matmul_kernel.ttgir (hip, matrix_instr_nonkdim=16)
    (("#triton_gpu.amd_mfma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [2, 2], instrShape = [16, 16], "
      "isTransposed = true}>"), True, 16),
    # fixtures/caches/triton-3.6/*/matmul_kernel.ttgir (gfx942)
    ("#ttg.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32, 8], isTransposed = true}>", True, 32),
])
def test_mfma_matches_the_documented_register_and_lane_arrangement(fragment, transposed, m):
    """AMD's matrix instruction calculator for v_mfma_f32_32x32x8f16 / 16x16x16f16: lane l,
    register r of a wave hold C[row][col] with col = l % M and
    row = 8*(r // 4) + 4*(l // 32) + r % 4 (32x32), row = 4*(l // 16) + r (16x16);
    the transposed layout swaps row and col. Warps tile N first, then M."""
    _, mfma = alias_in(fragment)
    shape = (2 * m, 2 * m)
    ll = to_linear(mfma, shape)
    assert ll.in_size("register") == m * m // 64 and ll.in_size("lane") == 64 and ll.in_size("warp") == 4
    for warp in range(4):
        for lane in range(64):
            for reg in range(m * m // 64):
                if m == 32:
                    row, col = 8 * (reg // 4) + 4 * (lane // 32) + reg % 4, lane % 32
                else:
                    row, col = 4 * (lane // 16) + reg, lane % 16
                if transposed:
                    row, col = col, row
                expected = (row + m * (warp // 2), col + m * (warp % 2))
                assert ll.apply(register=reg, lane=lane, warp=warp) == expected


def test_nvidia_mma_v2_matches_the_ptx_fragment():
    # fixtures/caches/triton-3.6/*/attn_fwd_kernel.ttgir (sm_80):
    # #mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>
    _, mma = alias_in("#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], "
                      "instrShape = [16, 8]}>")
    ll = to_linear(mma, (64, 8))
    # PTX mma.m16n8k16 accumulator: c0,c1 at row lane/4, cols 2*(lane%4)+{0,1}; c2,c3 8 rows down.
    for warp in range(4):
        for lane in range(32):
            for reg in range(4):
                row = lane // 4 + 8 * (reg // 2) + 16 * warp
                assert ll.apply(register=reg, lane=lane, warp=warp) == (row, 2 * (lane % 4) + reg % 2)


def test_linear_layout_given_directly_keeps_its_bases():
    # fixtures/caches/triton-3.6/*/matmul_kernel.ttgir (gfx950), on tensor<128x128xf16, #linear>
    _, lin = alias_in("#linear = #ttg.linear<{register = [[0, 1], [0, 2], [0, 4], [0, 16], [0, 64], [64, 0]]",
                      "linear")
    ll = to_linear(lin, (128, 128))
    assert ll.basis("register") == lin.register and ll.basis("lane") == lin.lane and ll.basis("warp") == lin.warp
    assert ll.covers_bijectively()
    assert to_linear(lin, (100, 128)) is None  # only power-of-two shapes are modelled


def test_slice_drops_the_sliced_dimension():
    # 3.9 gemm: tensor<128xi32, #blocked2> -> tensor<128xi32, #ttg.slice<{dim = 0, parent = #blocked3}>>
    # with #blocked3 = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [1, 4],
    #                                order = [0, 1]}>: the same threads hold the same columns.
    parent = Blocked((1, 1), (1, 32), (1, 4), (0, 1))
    sliced = to_linear(Slice(0, parent), (128,))
    assert sliced == to_linear(Blocked((1,), (32,), (4,), (0,)), (128,))
    # Sliced along the dim the lanes run in, lanes hold copies: their bases broadcast (are 0).
    column = to_linear(Slice(1, parent), (64,))
    assert column.basis("lane") == ((0,),) * 5 and column.basis("warp") == ((0,), (0,))


def test_mfma_result_and_its_operand_a_layout_are_the_same_on_flash_attention():
    # fixtures/caches/triton-3.6/*/attn_fwd_kernel.ttgir (gfx942): the P tile of the second dot,
    # tensor<128x64xf16, #mma> -> #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>, with
    # #mma = #ttg.amd_mfma<{version = 3, warpsPerCTA = [4, 1], instrShape = [32, 32, 8], isTransposed = true}>
    _, mma = alias_in("#ttg.amd_mfma<{version = 3, warpsPerCTA = [4, 1], instrShape = [32, 32, 8], "
                      "isTransposed = true}>")
    assert to_linear(mma, (128, 64)) == to_linear(DotOperand(0, mma, 4), (128, 64))
    assert to_linear(mma, (128, 64)) != to_linear(DotOperand(0, mma, 8), (128, 64))


def test_linear_layout_algebra_basics():
    a = LinearLayout.identity1d(4, "register", "dim0")
    b = LinearLayout.identity1d(2, "lane", "dim0") * LinearLayout.zeros1d(2, "lane", "dim1")
    prod = a * b
    assert prod.basis("register") == ((1, 0), (2, 0)) and prod.basis("lane") == ((4, 0), (0, 0))
    assert prod.shape == (8, 1)
    assert prod.transpose_outs(["dim1", "dim0"]).basis("lane") == ((0, 4), (0, 0))


# -- convert_layout -----------------------------------------------------------------------------------

FIXTURE_CONVERSIONS = list(fixture_conversions())


def test_every_fixture_conversion_is_decided():
    assert len(FIXTURE_CONVERSIONS) >= 40
    for path, version, shape, elem, src, dst in FIXTURE_CONVERSIONS:
        conv = classify_conversion(src, dst, shape, version, elem)
        assert conv.kind != "unknown", (path, src.summary(), dst.summary(), conv.reason)
        assert conv.reason.endswith(".") and len(conv.reason) < 200


def test_identical_layouts_are_a_noop():
    blocked = Blocked((1, 8), (8, 8), (4, 1), (1, 0))
    conv = classify_conversion(blocked, Blocked((1, 8), (8, 8), (4, 1), (1, 0)), (64, 64), None)
    assert conv.kind == "noop"


def test_blocked_to_blocked_across_warps_uses_shared_memory_in_every_version():
    # fixtures/before_after/before/*/tile_copy_kernel.ttgir (3.6, gfx942), tensor<64x64xf16>:
    # #blocked -> #blocked1 = #ttg.blocked<{[1, 1], [64, 1], [1, 4], order = [0, 1]}>: rows to columns.
    src, dst = Blocked((1, 8), (8, 8), (4, 1), (1, 0)), Blocked((1, 1), (64, 1), (1, 4), (0, 1))
    for version in ("3.0.0", "3.2.0", "3.4.0", "3.6.0", "3.9.0", None, "<3.3", ">=3.3"):
        conv = classify_conversion(src, dst, (64, 64), version, "f16")
        assert conv.kind == "shared_memory", (version, conv)
    assert "warps" in classify_conversion(src, dst, (64, 64), "3.6.0").reason


def test_conversions_the_compiler_gave_shared_memory_are_classified_so():
    # MLIR_ENABLE_DUMP output: after shared-memory allocation, a convert_layout that needs
    # scratch carries `allocation.offset`. Both surviving ones are wgmma accumulators -> blocked.
    checked = 0
    for dump, version in (("mlir-dump_triton-3.2_sm_90_gemm_aligned.txt.gz", "3.2"),
                          ("mlir-dump_triton-3.9_sm_90_gemm_aligned.txt.gz", "3.9")):
        text = gzip.decompress((FIXTURES / "dumps" / dump).read_bytes()).decode()
        start = text.index("ConvertTritonGPUToLLVM")  # the module just before lowering
        section = text[start:text.index("IR Dump Before", start)]
        r = AliasReader(section)
        for line in section.splitlines():
            m = _CVT.search(line.strip())
            if m and "allocation.offset" in line:
                shape = tuple(int(d) for d in m["shape"][:-1].split("x"))
                conv = classify_conversion(encoding(r, m["src"]), encoding(r, m["dst"]), shape, version, m["elem"])
                assert conv.kind == "shared_memory", (dump, conv)
                checked += 1
    assert checked == 2


def test_mfma_to_operand_shortcut_depends_on_version_and_type():
    # fixtures/caches/triton-3.2/*/attn_fwd_kernel.ttgir (gfx942): tensor<128x64xf16, #mma> ->
    # #triton_gpu.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>. isMfmaToDotShortcut (3.0-3.2)
    # holds for f16/bf16 only; from 3.2 the equal linear layouts decide for any type.
    mma = AmdMfma(3, (4, 1), (32, 32), True, 0)
    dot = DotOperand(0, mma, 4)
    assert classify_conversion(mma, dot, (128, 64), "3.0", "f16").kind == "registers"
    assert classify_conversion(mma, dot, (128, 64), "3.0", "f32").kind == "shared_memory"
    assert classify_conversion(mma, dot, (128, 64), "3.0", None).kind == "unknown"
    assert classify_conversion(mma, dot, (128, 64), "3.0", "None").kind == "unknown"
    assert classify_conversion(mma, dot, (128, 64), "3.2", "f16").kind == "registers"
    assert classify_conversion(mma, dot, (128, 64), "3.2", "f32").kind == "noop"
    assert classify_conversion(mma, dot, (128, 64), "3.6.0", "f32").kind == "noop"
    # kWidth 8 is not the shortcut and the layouts differ: the old versions use shared memory.
    wide = DotOperand(0, mma, 8)
    assert classify_conversion(mma, wide, (128, 64), "3.0", "f16").kind == "shared_memory"


# The two conversions of Triton's own test/Conversion/cvt_to_llvm.mlir (1 warp, 16x16 i32):
# one is lowered with shfl.sync.idx, the other is checked to go through shared memory.
_B0 = Blocked((1, 4), (8, 4), (1, 1), (1, 0))
_B_SHUFFLE = Blocked((1, 4), (16, 2), (1, 1), (1, 0))
_B_TRANSPOSE = Blocked((4, 1), (4, 8), (1, 1), (0, 1))


@pytest.mark.parametrize("dst, version, kind", [
    (_B_SHUFFLE, "3.5.0", "warp_shuffle"),
    (_B_SHUFFLE, "3.9.0", "warp_shuffle"),
    (_B_SHUFFLE, "3.2.0", "shared_memory"),  # no warp-shuffle lowering before 3.3
    (_B_SHUFFLE, "3.0.0", "shared_memory"),
    (_B_SHUFFLE, "3.4.0", "unknown"),  # 3.3-3.4: a cost heuristic irscope does not model
    (_B_TRANSPOSE, "3.9.0", "shared_memory"),  # needs 3 register<->lane swaps
    (_B_TRANSPOSE, "3.3.1", "shared_memory"),  # more than one select per shuffle
])
def test_lane_only_moves(dst, version, kind):
    conv = classify_conversion(_B0, dst, (16, 16), version, "i32")
    assert conv.kind == kind, conv


def test_unknown_version_says_which_versions_differ():
    conv = classify_conversion(_B0, _B_SHUFFLE, (16, 16), None, "i32")
    assert conv.kind == "unknown"
    assert "3.0-3.2 use shared memory" in conv.reason and "3.5 and later use warp shuffles" in conv.reason
    assert classify_conversion(_B0, _B_SHUFFLE, (16, 16), "<3.3", "i32").kind == "shared_memory"
    assert classify_conversion(_B0, _B_SHUFFLE, (16, 16), "2.3.0", "i32").kind == "unknown"


def test_gfx950_mfma_to_linear_is_a_lane_shuffle_and_the_asm_has_permlane_swaps():
    # Triton 3.6 gfx950 GEMMs convert the MFMA result to a #linear layout before storing:
    # a lane-only move, which the AMD backend lowers with v_permlane32_swap.
    hits = [(p, s, d, shape) for p, v, shape, _, s, d in FIXTURE_CONVERSIONS
            if v == "3.6" and isinstance(s, AmdMfma) and s.version == 4 and isinstance(d, Linear)]
    assert hits
    for path, src, dst, shape in hits:
        assert classify_conversion(src, dst, shape, "3.6.0").kind == "warp_shuffle"
        asm = path.with_suffix(".amdgcn").read_text()
        assert "v_permlane32_swap" in asm


def test_register_only_reorder_stays_in_registers_from_3_2():
    # 4 elements per thread, registers 0/1 and 2/3 swapped: nothing leaves the thread.
    src = Blocked((4,), (32,), (4,), (0,))
    dst = Linear(register=((2,), (1,)), lane=tuple((4 << i,) for i in range(5)), warp=((128,), (256,)))
    assert classify_conversion(src, dst, (512,), "3.6.0").kind == "registers"
    assert classify_conversion(src, dst, (512,), "3.2.0").kind == "registers"
    assert classify_conversion(src, dst, (512,), "3.0.0").kind == "shared_memory"


def test_layouts_irscope_cannot_model():
    blocked = Blocked((1, 8), (8, 8), (4, 1), (1, 0))
    unknown = build_layout("ttg.future_layout", {"x": 1}, "#ttg.future_layout<{x = 1}>")
    assert classify_conversion(blocked, unknown, (64, 64), "3.6.0").kind == "unknown"
    wmma = AmdWmma(1, False, (2, 2))
    conv = classify_conversion(blocked, wmma, (64, 64), "3.6.0")
    assert conv.kind == "unknown" and "no linear layout" in conv.reason
    shared = SwizzledShared(8, 1, 8, (1, 0))
    assert classify_conversion(blocked, shared, (64, 64), "3.6.0").kind == "shared_memory"


def test_cta_fields_of_3_0_to_3_2_blocked_layouts():
    # With num_ctas > 1, 3.0-3.2 print the cluster split inside #triton_gpu.blocked. (The corpus
    # is all num-ctas = 1, so these parameters are written here.) Two CTAs either split the
    # tensor (CTASplitNum 2) or each hold all of it (CTASplitNum 1: the block bit broadcasts).
    def blocked(split: int) -> Layout:
        params = {"sizePerThread": (1,), "threadsPerWarp": (32,), "warpsPerCTA": (4,), "order": (0,),
                  "CTAsPerCGA": (2,), "CTASplitNum": (split,), "CTAOrder": (0,)}
        return build_layout("triton_gpu.blocked", params, "#triton_gpu.blocked<{...}>")

    split, whole = to_linear(blocked(2), (256,)), to_linear(blocked(1), (256,))
    assert split.basis("block") == ((128,),) and split.basis("register") == ()
    assert whole.basis("block") == ((0,),) and whole.basis("register") == ((128,),)
    conv = classify_conversion(blocked(2), blocked(1), (256,), "3.2.0")
    assert conv.kind == "shared_memory" and "CTAs" in conv.reason
