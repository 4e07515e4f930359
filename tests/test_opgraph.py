"""Value flow across regions (loop-carried arguments, yields), on a real pipelined GEMM."""

from __future__ import annotations

from conftest import FIXTURES, load_manifest

from irscope.ir.opgraph import value_flow
from irscope.parsers.mlir_parser import parse_mlir


def _module(fixture: str, target: str, version: str = "3.6"):
    (e,) = [e for e in load_manifest()["kernels"] if e["cache"] == f"caches/triton-{version}"
            and e["fixture"] == fixture and e["target_name"] == target]
    path = FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.ttgir"
    return parse_mlir(path.read_text(), str(path))


def test_loop_carried_buffer_traces_back_to_its_allocation():
    # `%a_56` (iter_arg) = `%a_32` before the loop and `%a_69` from the yield: both views of `%a_30`
    module = _module("trans_dot", "gfx942")
    (load, *_) = [op for op in module.ops_named("ttg.local_load") if op.loop_depth == 1]
    origins = value_flow(module).origins(load.operands[0], ("ttg.memdesc_index",))
    assert [module.ops[i].canonical_name for i in origins] == ["ttg.local_alloc"]
    assert [module.values[v].name for i in origins for v in module.ops[i].results] == ["%a_30"]
