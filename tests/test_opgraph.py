"""The op graph: SSA def-use edges across regions, on a real pipelined GEMM."""

from __future__ import annotations

import networkx as nx
from conftest import FIXTURES, load_manifest

from irscope.ir.opgraph import op_graph, value_flow
from irscope.parsers.mlir_parser import parse_mlir


def _module(fixture: str, target: str, version: str = "3.6"):
    (e,) = [e for e in load_manifest()["kernels"] if e["cache"] == f"caches/triton-{version}"
            and e["fixture"] == fixture and e["target_name"] == target]
    path = FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.ttgir"
    return parse_mlir(path.read_text(), str(path))


def test_every_use_is_an_edge_from_its_definition():
    module = _module("trans_dot", "gfx942")
    graph = op_graph(module)
    assert graph.number_of_nodes() == len(module.ops)
    uses = sum(1 for op in module.ops for v in op.operands if module.values[v].owner >= 0)
    assert graph.number_of_edges() == uses
    for src, dst, position, vid in graph.edges(keys=True, data="value_id"):
        assert module.ops[dst].operands[position] == vid
        value = module.values[vid]
        assert value.owner == src  # the defining op, or the loop / function declaring the argument
    assert nx.is_directed_acyclic_graph(graph)
    (dot, *_) = module.ops_named("tt.dot")
    preds = {module.ops[p].canonical_name for p in graph.predecessors(dot.index)}
    assert preds == {"ttg.local_load", "tt.trans", "scf.for"}  # a, trans(bt), the loop-carried acc


def test_loop_carried_buffer_traces_back_to_its_allocation():
    # `%a_56` (iter_arg) = `%a_32` before the loop and `%a_69` from the yield: both views of `%a_30`
    module = _module("trans_dot", "gfx942")
    (load, *_) = [op for op in module.ops_named("ttg.local_load") if op.loop_depth == 1]
    origins = value_flow(module).origins(load.operands[0], ("ttg.memdesc_index",))
    assert [module.ops[i].canonical_name for i in origins] == ["ttg.local_alloc"]
    assert [module.values[v].name for i in origins for v in module.ops[i].results] == ["%a_30"]
