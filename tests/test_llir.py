"""The `.llir` parser over every real LLVM IR file in fixtures/ (Triton 3.0-3.9, AMD and NVIDIA).

Counts are checked against independent reads of the same file written with plain string
methods, not the parser's regexes; source lines against the kernel files in fixtures/kernels.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest
from irscope.parsers.llir import parse_llir

from irscope.ir.llvm_ir import CALL_FAMILIES, CALL_KINDS, MEMORY_KINDS, LlvmModule

MANIFEST = load_manifest()
ALL_LLIR = sorted(FIXTURES.rglob("*.llir"))
KERNEL_SOURCES = FIXTURES / "kernels"
NEUTRAL_KERNELS = MANIFEST["neutral_path"] + "/kernels/"  # where build.py compiled the kernels from


def _entry_llir(entry: dict) -> Path:
    return next((FIXTURES / entry["cache"] / entry["dir"]).glob("*.llir"))


def _entries(**where) -> list[dict]:
    return [e for e in MANIFEST["kernels"] if all(e.get(k) == v for k, v in where.items())]


def _id(entry: dict) -> str:
    return f"{entry['triton_version']}-{entry['target_name']}-{entry['fixture']}-{entry['dir'][:6]}"


@cache
def _parsed(path: Path) -> LlvmModule:
    return parse_llir(path.read_text(), str(path))


@cache
def _lines(path: Path) -> tuple[str, ...]:
    return tuple(path.read_text().split("\n"))


def _kernel(path: Path):
    (kernel,) = _parsed(path).kernels
    return kernel


def test_the_corpus_is_all_there():
    assert len(ALL_LLIR) == 132
    assert sum(1 for e in MANIFEST["kernels"] if "llir" in {f.rsplit(".", 1)[-1] for f in e["files"]}) == 130


# --- every file --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_llir_parses_without_problems(path):
    module = _parsed(path)
    lines = _lines(path)
    assert module.problems == ()
    assert len(module.functions) == 1 and module.functions[0].is_kernel
    fn = module.functions[0]
    assert lines[fn.line - 1].startswith("define ") and f"@{fn.name}(" in lines[fn.line - 1]
    assert lines[fn.end_line - 1] == "}"
    assert fn.calling_conv in ("amdgpu_kernel", "ptx_kernel", None)
    assert module.backend == ("hip" if "amdgcn" in "".join(lines) else "cuda")
    for record in fn.calls + fn.memory_ops:
        assert fn.line < record.line < fn.end_line
    assert {c.family for c in fn.calls} <= set(CALL_FAMILIES)
    assert {c.kind for c in fn.calls} <= set(CALL_KINDS)
    assert {op.kind for op in fn.memory_ops} <= set(MEMORY_KINDS)


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_record_names_what_is_on_its_line(path):
    fn = _kernel(path)
    lines = _lines(path)
    for call in fn.calls:
        text = lines[call.line - 1]
        assert " call " in text
        assert (" asm " in text and call.name in text) if call.kind == "inline_asm" else f"@{call.name}(" in text
    for op in fn.memory_ops:
        text = lines[op.line - 1]
        if op.via is None:  # an IR instruction: `%18 = load float, ptr %17` or `store <4 x half> ...`
            assert text.split(" = ")[-1].lstrip().startswith(op.kind), text
            assert op.value_type in text
        else:
            assert op.via in text  # the intrinsic or the PTX mnemonic
        assert op.alignment is None or f"align {op.alignment}" in text or f"i32 {op.alignment}" in text


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_memory_instruction_counts_match_a_plain_count(path):
    """Loads/stores/atomics per (kind, address space), counted line by line with str methods."""
    expected: Counter = Counter()
    for line in _lines(path):
        if not line.startswith("  "):
            continue
        instruction = line.split(" = ", 1)[1] if line.lstrip().startswith("%") else line.lstrip()
        word = instruction.split(" ", 1)[0]
        if word not in MEMORY_KINDS:
            continue
        pointer = instruction.split("ptr", 1)[1] if word in ("atomicrmw", "cmpxchg") \
            else instruction.rsplit(", ptr", 1)[1]
        space = int(pointer.split("addrspace(", 1)[1].split(")")[0]) if pointer.startswith(" addrspace(") else 0
        expected[word, space] += 1
    found = Counter((op.kind, op.address_space) for op in _kernel(path).memory_ops if op.via is None)
    assert found == expected


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_calls_match_a_plain_count(path):
    lines = _lines(path)
    fn = _kernel(path)
    call_lines = [t for t in lines[fn.line:fn.end_line] if " call " in t]
    assert len(fn.calls) == len(call_lines)
    mfma = sum(1 for t in call_lines if "@llvm.amdgcn.mfma." in t)
    assert len(fn.calls_in("mfma")) == mfma
    wgmma = sum(1 for t in call_lines if ' asm sideeffect "wgmma.mma_async' in t)
    assert len(fn.calls_in("wgmma")) == wgmma
    barriers = sum(1 for t in call_lines if "@llvm.amdgcn.s.barrier(" in t or "@llvm.nvvm.barrier" in t
                   or "@llvm.nvvm.bar.warp.sync" in t or "@llvm.amdgcn.s.barrier.signal(" in t)
    assert len(fn.calls_in("barrier")) == barriers
    waits = sum(1 for t in call_lines if "@llvm.amdgcn.s.barrier.wait(" in t)
    assert len(fn.calls_in("barrier_wait")) == waits


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_inline_ptx_memory_ops_match_the_asm_strings(path):
    """NVIDIA global loads/stores are inline PTX; each ld/st/atom statement is one MemoryOp."""
    expected: Counter = Counter()
    for line in _lines(path):
        if " asm " not in line:
            continue
        asm = line.split(' asm ', 1)[1].split('"')[1]
        for statement in asm.replace("\\0A", ";").replace("\\09", " ").split(";"):
            tokens = [t for t in statement.split() if not t.startswith("@")]
            if tokens and tokens[0].split(".")[0] in ("ld", "st", "atom", "red"):
                expected[tokens[0]] += 1
    assert Counter(op.via for op in _kernel(path).memory_ops if op.via and "." in op.via
                   and not op.via.startswith("llvm.")) == expected


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_debug_locations_point_into_the_kernel_sources(path):
    fn = _kernel(path)
    lines = _lines(path)
    for record in fn.calls + fn.memory_ops:
        if "!dbg" not in lines[record.line - 1]:
            assert record.debug is None
            continue
        where = record.debug
        assert where is not None and where.file.startswith(NEUTRAL_KERNELS), where
        source = (KERNEL_SOURCES / where.file[len(NEUTRAL_KERNELS):]).read_text().split("\n")
        assert 1 <= where.line <= len(source) and where.column >= 1
        for frame in where.inlined:  # helpers Triton inlined: tl.cdiv, tl.max, ... in triton/language
            assert "/triton/language/" in frame.file and frame.line >= 1
    # The kernel's own DISubprogram is its `def` line.
    source = (KERNEL_SOURCES / fn.debug.file[len(NEUTRAL_KERNELS):]).read_text().split("\n")
    assert f"def {fn.name}(" in source[fn.debug.line - 1]


def test_some_locations_come_through_inlined_helpers():
    inlined = [r.debug for p in ALL_LLIR for r in _kernel(p).calls + _kernel(p).memory_ops
               if r.debug is not None and r.debug.inlined]
    assert inlined and all(d.inlined[0].file.endswith("/triton/language/standard.py") for d in inlined)
    assert max(len(d.inlined) for d in inlined) == 2  # softmax's max inside a reduce


# --- what the manifest says about each kernel --------------------------------------------------


@pytest.mark.parametrize("entry", MANIFEST["kernels"], ids=_id)
def test_kernel_name_backend_and_block_size(entry):
    module = _parsed(_entry_llir(entry))
    (kernel,) = module.kernels
    assert kernel.name == entry["name"]
    assert module.backend == entry["target"]["backend"]
    lines = _lines(_entry_llir(entry))
    threads = entry["target"]["warp_size"] * entry["metadata"]["num_warps"]
    if entry["target"]["backend"] == "hip":
        assert kernel.calling_conv == "amdgpu_kernel"
        assert kernel.attributes["amdgpu-flat-work-group-size"] == f"1,{threads}"
        assert lines[kernel.attribute_lines["amdgpu-flat-work-group-size"] - 1].startswith("attributes #")
        return
    # NVIDIA: an attribute from 3.6 on, an !nvvm.annotations entry before.
    key = {"3.0.0": "nvvm.maxntidx", "3.2.0": "nvvm.reqntidx"}.get(entry["triton_version"], "nvvm.reqntid")
    assert kernel.attributes[key] == str(threads)
    if key == "nvvm.reqntid":
        assert kernel.calling_conv == "ptx_kernel"
    else:
        assert kernel.calling_conv is None and kernel.attributes["nvvm.kernel"] == "1"
        annotation = lines[kernel.attribute_lines[key] - 1]
        assert f"@{kernel.name}, !\"{key[5:]}\", i32 {threads}" in annotation


@pytest.mark.parametrize("entry", _entries(target_name="gfx942") + _entries(target_name="gfx950")
                         + _entries(target_name="gfx90a"), ids=_id)
def test_waves_per_eu_attribute(entry):
    value = _kernel(_entry_llir(entry)).attributes.get("amdgpu-waves-per-eu")
    if "waves_per_eu" in entry["options"]:
        assert value.replace(" ", "") == f"{entry['options']['waves_per_eu']},{entry['options']['waves_per_eu']}"
    else:  # unset: 3.0/3.2 write "1", 3.6 "0, 0", 3.9 leaves it out
        assert value == {"3.0.0": "1", "3.2.0": "1", "3.6.0": "0, 0", "3.9.0": None}[entry["triton_version"]]


@pytest.mark.parametrize("entry", _entries(triton_version="3.6.0") + _entries(triton_version="3.9.0"), ids=_id)
def test_maxnreg_attribute_only_where_set(entry):
    attributes = _kernel(_entry_llir(entry)).attributes
    assert attributes.get("nvvm.maxnreg") == (str(entry["options"]["maxnreg"]) if "maxnreg" in entry["options"]
                                              else None)


@pytest.mark.parametrize("entry", [e for e in MANIFEST["kernels"] if e["target_name"] == "gfx942"
                                   and e["fixture"].startswith(("gemm", "autotune_gemm", "splitk", "int4"))],
                         ids=_id)
def test_gfx942_gemms_call_mfma(entry):
    kernel = _kernel(_entry_llir(entry))
    names = {c.name for c in kernel.calls_in("mfma")}
    assert names and all(n.startswith("llvm.amdgcn.mfma.") for n in names)
    nonkdim = entry["options"].get("matrix_instr_nonkdim")
    if nonkdim:  # 16 -> mfma.f32.16x16x16f16, 32 -> mfma.f32.32x32x8f16
        assert all(f".{nonkdim}x{nonkdim}x" in n for n in names)


@pytest.mark.parametrize("entry", _entries(fixture="add"), ids=_id)
def test_vector_add_has_no_matrix_ops(entry):
    families = {c.family for c in _kernel(_entry_llir(entry)).calls}
    assert not families & {"mfma", "wmma", "mma", "wgmma", "ldmatrix", "stmatrix", "transpose_load"}


@pytest.mark.parametrize("entry", [e for e in MANIFEST["kernels"] if e["target"]["backend"] == "cuda"
                                   and "gemm" in e["fixture"]], ids=_id)
def test_nvidia_gemms_use_wgmma_on_hopper_and_mma_sync_on_ampere(entry):
    kernel = _kernel(_entry_llir(entry))
    if entry["target_name"] == "sm_90":
        assert kernel.calls_in("wgmma") and not kernel.calls_in("mma")
        assert all(c.kind == "inline_asm" and c.name.startswith("wgmma.mma_async.") for c in kernel.calls_in("wgmma"))
    else:
        assert kernel.calls_in("mma") and not kernel.calls_in("wgmma")
        assert {c.name for c in kernel.calls_in("mma")} == {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"}


@pytest.mark.parametrize("entry", MANIFEST["kernels"], ids=_id)
def test_matrix_ops_and_global_accesses_map_to_their_source_statements(entry):
    kernel = _kernel(_entry_llir(entry))
    source = (KERNEL_SOURCES / kernel.debug.file.rsplit("/", 1)[1]).read_text().split("\n")
    for call in kernel.calls_in("mfma") + kernel.calls_in("mma") + kernel.calls_in("wgmma"):
        assert "tl.dot(" in source[call.debug.line - 1]
    for op in kernel.memory_ops:
        if op.space in ("global", "buffer"):
            wanted = {"load": "tl.load(", "store": "tl.store(", "atomicrmw": "tl.atomic_"}[op.kind]
            assert wanted in source[op.debug.line - 1], (op, source[op.debug.line - 1])


# --- widths, as the README's before/after pairs describe them ----------------------------------


def _global_bits(entry: dict, kind: str) -> set[int]:
    return {op.bits for op in _kernel(_entry_llir(entry)).memory_ops if op.kind == kind and op.space == "global"}


@pytest.mark.parametrize("entry", [e for e in MANIFEST["kernels"] if e["fixture"].startswith("tile_copy")],
                         ids=_id)
def test_tile_copy_store_width_follows_the_hints(entry):
    assert _global_bits(entry, "store") == ({128} if entry["fixture"] == "tile_copy_hint" else {16})


@pytest.mark.parametrize("entry", [e for e in MANIFEST["kernels"] if e["target"]["backend"] == "hip"
                                   and e["fixture"] in ("gemm_aligned", "gemm_unaligned")
                                   and e["triton_version"] != "3.0.0"], ids=_id)
def test_gemm_global_load_width_follows_alignment(entry):
    bits = _global_bits(entry, "load")
    if entry["fixture"] == "gemm_unaligned":
        assert bits == {16}
    else:  # gfx950 on 3.9 copies straight to LDS (global.load.async.lds): no register loads at all
        assert bits <= {128}
        assert bits or _kernel(_entry_llir(entry)).calls_in("async_copy")


@pytest.mark.parametrize("entry", [e for e in _entries(fixture="add") if e["target"]["backend"] == "cuda"], ids=_id)
def test_nvidia_vector_add_moves_128_bits_through_inline_ptx(entry):
    ops = _kernel(_entry_llir(entry)).memory_ops
    assert Counter(op.via for op in ops) == {"ld.global.v4.b32": 4, "st.global.v4.b32": 2}
    assert {(op.space, op.bits, op.value_type) for op in ops} == {("global", 128, ".v4.b32")}


def _ir_type_bits(ir_type: str) -> int:
    scalars = {"half": 16, "float": 32, "i8": 8, "i16": 16, "i32": 32, "i64": 64}
    if ir_type.startswith("<"):
        count, element = ir_type[1:-1].split(" x ")
        return int(count) * scalars[element]
    if ir_type.startswith("{"):
        return sum(scalars[t.strip()] for t in ir_type[1:-1].split(","))
    return scalars[ir_type]


@pytest.mark.parametrize("entry", _entries(fixture="flash_attn"), ids=_id)
def test_attention_shared_memory_accesses_and_widths(entry):
    """addrspace(3) loads/stores with the widths the file's types give, read with str.split."""
    path = _entry_llir(entry)
    expected: Counter = Counter()
    for line in _lines(path):
        if " = load " in line and ", ptr addrspace(3) " in line:
            ir_type = line.split(" = load ", 1)[1].split(", ptr addrspace(3) ")[0]
            expected["load", ir_type, _ir_type_bits(ir_type)] += 1
        elif line.lstrip().startswith("store ") and ", ptr addrspace(3) " in line:
            value = line.lstrip()[len("store "):].split(", ptr addrspace(3) ")[0]
            ir_type = value.rsplit(" ", 1)[0]  # drop the stored value (%123 or zeroinitializer)
            expected["store", ir_type, _ir_type_bits(ir_type)] += 1
    kernel = _kernel(path)
    found = Counter((op.kind, op.value_type, op.bits) for op in kernel.memory_in(3) if op.via is None)
    assert found == expected and expected
    assert all(op.space == "shared" for op in kernel.memory_in(3))
    if (entry["triton_version"], entry["target_name"]) == ("3.6.0", "gfx942"):
        assert found == {("load", "<4 x half>", 64): 72, ("store", "<4 x half>", 64): 16,
                         ("store", "<2 x half>", 32): 16}


def test_ldmatrix_and_lds_transpose_reads_are_shared_loads():
    (sm80,) = [e for e in _entries(fixture="flash_attn") if e["target_name"] == "sm_80"]
    loads = [op for op in _kernel(_entry_llir(sm80)).memory_in(3, "load") if op.via]
    assert len(loads) == 48 and {op.bits for op in loads} == {128}  # ldmatrix .x4: four 32-bit registers
    (gfx950,) = [e for e in _entries(fixture="flash_attn") if e["target_name"] == "gfx950"]
    reads = [op for op in _kernel(_entry_llir(gfx950)).memory_in(3, "load") if op.via]
    assert reads and {(op.via, op.bits) for op in reads} == {("llvm.amdgcn.ds.read.tr16.b64.v4f16", 64)}


def test_buffer_ops_use_the_buffer_resource_address_space():
    (entry,) = _entries(fixture="gemm_bufferops", triton_version="3.6.0")
    ops = [op for op in _kernel(_entry_llir(entry)).memory_ops if op.address_space == 8]
    assert ops and {op.space for op in ops} == {"buffer"}
    assert {op.via.rsplit(".", 1)[0] for op in ops} <= {"llvm.amdgcn.raw.ptr.buffer.load",
                                                         "llvm.amdgcn.raw.ptr.buffer.store"}


def test_splitk_atomics():
    for entry in _entries(fixture="splitk_gemm"):
        atomics = [op for op in _kernel(_entry_llir(entry)).memory_ops if op.kind == "atomicrmw"]
        assert atomics and {op.operation for op in atomics} <= {"fadd", "add"} and atomics[0].space == "global"


# --- broken input ------------------------------------------------------------------------------


def _gemm_llir() -> Path:
    (entry,) = _entries(fixture="gemm_aligned", triton_version="3.6.0", target_name="gfx942", cache="caches/triton-3.6")
    return _entry_llir(entry)


def test_truncated_file_keeps_what_was_read():
    path = _gemm_llir()
    text = path.read_text()
    full = _kernel(path)
    cut = text[: len(text) // 2]
    module = parse_llir(cut, str(path))
    (problem,) = [p for p in module.problems if p.severity == "error"]
    assert "no closing" in problem.message and problem.line == full.line and problem.path == str(path)
    (fn,) = module.functions
    last_whole_line = cut.count("\n")
    assert fn.end_line is None
    assert [(c.name, c.line) for c in fn.calls] == [(c.name, c.line) for c in full.calls if c.line <= last_whole_line]
    assert [(op.kind, op.bits, op.line) for op in fn.memory_ops] == \
        [(op.kind, op.bits, op.line) for op in full.memory_ops if op.line <= last_whole_line]
    assert all(r.debug is None for r in fn.calls + fn.memory_ops)  # the !dbg metadata was in the cut half
    # The attribute groups and debug info were at the end: both are reported, neither raises.
    assert any("attribute group #0" in p.message for p in module.problems)
    assert any("!dbg" in p.message for p in module.problems)


def test_file_cut_inside_the_define_line():
    text = _gemm_llir().read_text()
    start = text.index("\ndefine ") + 1
    module = parse_llir(text[: start + 40], "cut.llir")
    assert module.functions == ()
    assert [(p.line, p.severity) for p in module.problems] == [(text[:start].count("\n") + 1, "error")]


@pytest.mark.parametrize("path", ALL_LLIR[::9], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_cut_anywhere_never_raises(path):
    text = path.read_text()
    for i in range(1, 41):
        cut = text[: len(text) * i // 41]
        module = parse_llir(cut, str(path))
        assert all(r.line <= cut.count("\n") + 1 for f in module.functions for r in f.calls + f.memory_ops)


@pytest.mark.parametrize("path", ALL_LLIR[::12], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_garbled_lines_never_raise(path):
    """Lines dropped, cut, swapped or replaced by IR-looking junk: a module and problems, no exception."""
    junk = ["}", "define void @x(", "  store", "  %1 = load <4 x", '  call void asm "', "attributes #0 = {",
            '!1 = !DILocation(line: "x", scope: !1, inlinedAt: "y")', "  tail call void @llvm.masked.store.v4f16.p1("]
    rng = random.Random(str(path.name))
    lines = list(_lines(path))
    for _ in range(25):
        garbled = lines[:]
        for _ in range(rng.randint(1, 20)):
            i, op = rng.randrange(len(garbled)), rng.random()
            if op < 0.3:
                del garbled[i]
            elif op < 0.6:
                garbled[i] = garbled[i][: rng.randrange(len(garbled[i]) + 1)]
            elif op < 0.8:
                garbled.insert(i, rng.choice(junk))
            else:
                j = rng.randrange(len(garbled))
                garbled[i], garbled[j] = garbled[j], garbled[i]
        assert isinstance(parse_llir("\n".join(garbled), str(path)), LlvmModule)


def test_records_are_hashable_values():
    module = _parsed(ALL_LLIR[0])
    assert hash(module) == hash(parse_llir(ALL_LLIR[0].read_text(), str(ALL_LLIR[0])))


def test_empty_and_non_ir_text():
    assert parse_llir("", "empty.llir").problems[0].message.startswith("no function definitions")
    module = parse_llir("this is not LLVM IR\n\x7f\n}\n", "junk.llir")
    assert module.functions == () and len(module.problems) == 1

