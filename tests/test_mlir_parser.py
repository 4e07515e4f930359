"""The MLIR parser over every TTIR and TTGIR file of the real fixture corpus."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.ir.types import MemDescType, PointerType, ScalarType, TensorType
from irscope.ir.mlir import CORE_DIALECTS
from irscope.parsers.mlir_parser import parse_mlir

MANIFEST = load_manifest()
ENTRIES = [e for e in MANIFEST["kernels"]]
IR_FILES = [(e, FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.{stage}")
            for e in ENTRIES for stage in ("ttir", "ttgir")
            if (FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.{stage}").exists()]


def _id(item) -> str:
    entry, path = item
    cache = entry["cache"].split("/")[-1]
    return f"{cache}-{entry['target_name']}-{entry['fixture']}-{path.suffix[1:]}-{entry['dir'][:6]}"


@lru_cache(maxsize=None)
def parsed(path: Path):
    return parse_mlir(path.read_text(), str(path))


# An op line as grep sees it: optional results, then a dialect-qualified op name (or a
# quoted generic one). Used as an independent count of the parser's ops.
#     %a_ptrs_21 = tt.addptr %a_ptrs_19, %a_ptrs_20 : tensor<...>
#     %x_6 = "tt.reduce"(%x_5) <{axis = 0 : i32}> ({
OP_LINE = re.compile(r'^\s*(?:%[\w#:, -]+=\s*)?(?:"[a-z_]+\.[\w.]+"|[a-z_]+\.[\w.]+|module\b)', re.M)


def test_corpus_has_every_version_and_target():
    versions = {e["triton_version"][:3] for e, _ in IR_FILES}
    targets = {e["target_name"] for e, _ in IR_FILES}
    assert {"3.0", "3.2", "3.6", "3.9"} <= versions
    assert {"gfx942", "gfx950", "gfx90a", "sm_90", "sm_80"} <= targets
    assert len(IR_FILES) >= 200


@pytest.mark.parametrize("item", IR_FILES, ids=_id)
def test_file_parses_fully_structured(item):
    entry, path = item
    module = parsed(path)
    text = path.read_text()
    assert module.problems == ()
    assert module.unstructured(CORE_DIALECTS) == []
    assert len(module.ops) == len(OP_LINE.findall(text))
    lines = text.splitlines()
    for op in module.ops:  # each op points at the line that holds it
        assert op.name in lines[op.line - 1]
    for value in module.values:
        assert value.kind != "undefined"
        if value.kind == "result":
            assert value.type is not None, (value.name, value.line)


@pytest.mark.parametrize("item", [i for i in IR_FILES if i[1].suffix == ".ttgir"], ids=_id)
def test_module_attributes_match_the_metadata(item):
    entry, path = item
    module = parsed(path)
    assert module.num_warps == entry["metadata"]["num_warps"]
    assert module.threads_per_warp == entry["target"]["warp_size"]
    backend, arch = entry["target"]["backend"], str(entry["target"]["arch"])
    assert module.target == f"{backend}:{arch}"
    fact = module.module_attribute("num-warps")
    assert fact.origin.line and str(fact.value) in path.read_text().splitlines()[fact.origin.line - 1]
    # 3.0-3.2 spell the dialect triton_gpu, 3.3+ ttg: both read the same
    prefix = "triton_gpu." if entry["triton_version"] < "3.3" else "ttg."
    assert fact.origin.detail == prefix + "num-warps"


def _one(version: str, target: str, fixture: str, stage: str = "ttgir"):
    (path,) = [p for e, p in IR_FILES if e["cache"] == f"caches/triton-{version}" and e["target_name"] == target
               and e["fixture"] == fixture and p.suffix == "." + stage]
    return parsed(path), path


def test_scf_for_results_and_loop_carried_arguments_are_typed():
    # trans_dot 3.6 gfx942: `%acc_35:6 = scf.for %acc_51 = %c0_i32 to %acc_34 step %c64_i32
    #   iter_args(%acc_52 = %acc_0, ..., %a_56 = %a_32, %bt_57 = %bt_33) -> (tensor<128x128xf32, #mma>, ...) : i32`
    module, _ = _one("3.6", "gfx942", "trans_dot")
    (loop,) = module.ops_named("scf.for")
    results = [module.values[v] for v in loop.results]
    assert [v.name for v in results] == [f"%acc_35#{i}" for i in range(6)]
    assert str(results[0].type) == "tensor<128x128xf32, #mma>"
    assert isinstance(results[4].type, MemDescType) and results[4].type.mutable
    args = [module.values[v] for v in loop.regions[0].blocks[0].arguments]
    assert args[0].name == "%acc_51" and args[0].type == ScalarType("i32")  # induction variable
    assert [a.name for a in args[1:3]] == ["%acc_52", "%a_ptrs_53"]
    assert args[1].type == results[0].type
    # lb, ub, step and the six inits are the loop's operands; the loop variables are not
    assert [module.values[v].name for v in loop.operands][:4] == ["%c0_i32", "%acc_34", "%c64_i32", "%acc_0"]
    body_ops = [module.ops[i] for i in loop.regions[0].blocks[0].ops]
    assert all(op.loop_depth == 1 and op.parent == loop.index for op in body_ops)
    assert body_ops[-1].canonical_name == "scf.yield"
    # `%a_39 = ttg.local_load %acc_35#4` uses result 4 of the loop
    (after,) = [op for op in module.ops if op.line > loop.line and op.canonical_name == "ttg.local_load"
                and module.values[op.operands[0]].name == "%acc_35#4"]
    assert module.values[after.operands[0]].owner == loop.index


def test_generic_reduce_has_its_region_and_block_arguments():
    # softmax: `%x_6 = "tt.reduce"(%x_5) <{axis = 0 : i32}> ({ ^bb0(%x_9: f32 ..., %x_10: f32 ...): ... })
    #   : (tensor<1024xf32, #blocked>) -> f32`
    module, _ = _one("3.6", "gfx942", "softmax")
    reduces = list(module.ops_named("tt.reduce"))
    assert reduces
    for red in reduces:
        assert red.structured and red.attributes["axis"] in (0, 1)
        (region,) = red.regions
        args = [module.values[v] for v in region.blocks[0].arguments]
        assert len(args) == 2 and all(a.kind == "argument" and isinstance(a.type, ScalarType) for a in args)
        ret = module.ops[region.blocks[0].ops[-1]]
        assert ret.canonical_name == "tt.reduce.return"
        (operand,) = red.operands
        assert isinstance(module.values[operand].type, TensorType)


def test_types_carry_shapes_pointers_and_layouts():
    module, _ = _one("3.6", "gfx942", "trans_dot")
    loads = list(module.ops_named("tt.load"))
    ptr = module.values[loads[0].operands[0]].type
    assert isinstance(ptr, TensorType) and isinstance(ptr.element, PointerType)
    assert ptr.element.pointee == ScalarType("f16")
    result = module.values[loads[0].results[0]].type
    assert result.shape == ptr.shape and result.element == ScalarType("f16")  # tt.load's result: the pointee
    assert result.encoding is module.aliases["#blocked"]
    (dot, *_) = module.ops_named("tt.dot")
    a = module.values[dot.operands[0]].type
    assert a.encoding_ref == "#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 4}>"
    assert a.encoding.parent is module.aliases["#mma"]


def test_callsite_locations_keep_the_user_and_library_frames():
    # trans_dot 3.6: `#loc72 = loc(callsite(#loc3 at #loc44))`, #loc3 in triton/language/standard.py,
    # #loc44 = loc("acc"(#loc4)) with #loc4 at trans_dot.py:25 (`acc = tl.zeros(...)`)
    module, _ = _one("3.6", "gfx942", "trans_dot")
    located = [op for op in module.ops if op.location and len(op.location.frames) == 2]
    assert located
    for op in located:
        inner, outer = op.location.frames
        assert inner.file.endswith("triton/language/standard.py")
        assert outer.file.endswith("kernels/trans_dot.py") and outer.line == 25
        assert op.location.names[0] == "acc"


def test_aliases_defined_after_their_use_resolve_the_same():
    # Move every layout alias line of a real file after the module: MLIR allows it.
    module, path = _one("3.6", "gfx942", "trans_dot")
    lines = path.read_text().splitlines(keepends=True)
    layout_aliases = [ln for ln in lines if re.match(r"#(blocked|mma|shared|linear|smem)\w* = ", ln)]
    moved = "".join(ln for ln in lines if ln not in layout_aliases) + "".join(reversed(layout_aliases))
    again = parse_mlir(moved, "moved.ttgir")
    assert again.problems == ()
    assert [str(v.type) for v in again.values] == [str(v.type) for v in module.values]
    assert [type(v.type.encoding).__name__ for v in again.values if isinstance(v.type, TensorType)] == \
        [type(v.type.encoding).__name__ for v in module.values if isinstance(v.type, TensorType)]


def test_truncated_file_keeps_what_was_read_and_says_where():
    module, path = _one("3.6", "gfx942", "gemm_aligned")
    text = path.read_text()
    cut = text[: len(text) // 2]
    half = parse_mlir(cut, "half.ttgir")
    assert 0 < len(half.ops) < len(module.ops)
    assert [op.name for op in half.ops] == [op.name for op in module.ops[: len(half.ops)]]
    (problem,) = [p for p in half.problems if "truncated" in p.message]
    assert problem.path == "half.ttgir" and problem.line == module.ops[0].line  # the module's `{`


def test_mlir_dump_sections_parse(tmp_path):
    import gzip

    dumps = sorted((FIXTURES / "dumps").glob("*.txt.gz"))
    assert dumps
    for dump in dumps:
        text = gzip.open(dump, "rt").read()
        sections = re.split(r"^// -----// IR Dump .*$", text, flags=re.M)
        # TTIR/TTGIR sections only: once lowered to the LLVM dialect a section holds llvm.func.
        # The GEMM dumps are large: their last TTGIR sections are enough here.
        ir_sections = [s for s in sections if "tt.func" in s]
        assert len(ir_sections) > 10
        if "gemm" in dump.name:
            ir_sections = ir_sections[-3:]
        modules = [parse_mlir(s, dump.name) for s in ir_sections]
        for module in modules:
            assert module.unstructured(CORE_DIALECTS) == [], dump.name
        # `ttg.shared` / `triton_gpu.shared` appears once LDS is allocated, before LLVM lowering
        assert any(m.module_attribute("shared") is not None for m in modules)


def test_parses_in_threads_keep_their_own_repairs():
    # The TUI parses in worker threads: one thread's truncated file must not report into another's.
    import threading

    _, path = _one("3.6", "gfx942", "gemm_aligned")
    text = path.read_text()
    results: dict = {}

    def parse(name: str, body: str) -> None:
        results[name] = [parse_mlir(body, name).problems for _ in range(5)]

    threads = [threading.Thread(target=parse, args=(f"{kind}{i}", text if kind == "full" else text[: len(text) // 3]))
               for i in range(3) for kind in ("full", "cut")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(problems == () for name, runs in results.items() if name.startswith("full") for problems in runs)
    assert all(problems for name, runs in results.items() if name.startswith("cut") for problems in runs)


def test_ops_and_values_are_what_their_dataclass_init_builds():
    """mlir_build fills Op and Value instances' fields directly (their frozen __init__ is slow):
    a field added to either must be added there too."""
    import dataclasses

    from irscope.ir.mlir import Op, Value

    module = parsed(IR_FILES[0][1])
    for obj in (*module.ops[:20], *module.values[:20]):
        fields = [f.name for f in dataclasses.fields(type(obj))]
        again = type(obj)(**{name: getattr(obj, name) for name in fields})
        assert list(vars(obj)) == fields and vars(obj) == vars(again)
    assert isinstance(module.ops[0], Op) and isinstance(module.values[0], Value)
