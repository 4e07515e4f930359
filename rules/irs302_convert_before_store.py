"""IRS302 convert-before-store."""

from __future__ import annotations

from collections import defaultdict

from irscope.ir.types import TensorType, encoding_of
from irscope.ir.pointer_strides import PointerStrides, address_strides
from irscope.engine.rule import Rule
from irscope.rules._inductor import inductor_kernel
from irscope.rules._irs301_tiles import MMA_NAMES
from irscope.rules._ttgir_text import (layout_name, lines_text, memory_word, python_of, tile_bytes,
                                      tile_text)

# Ops that take LDS scratch or buffers of their own: with none of them in the TTGIR, the
# kernel's whole shared-memory allocation is the epilogue conversion's scratch.
OTHER_LDS_USERS = frozenset({"ttg.local_alloc", "tt.reduce", "tt.scan", "tt.histogram", "tt.gather",
                             "tt.atomic_rmw", "tt.atomic_cas", "tt.print", "tt.assert"})

# A conversion of this many bytes or fewer moves a reduction's result (a row's sum, a block's max):
# one barrier per program. The real-world ledger found each such finding to cost nothing.
SMALL_BYTES = 64
# An accumulator tile this small (16x16 bf16 is 512 B) is not worth a tensor descriptor of its own.
SMALL_TILE = 1024


class ConvertBeforeStore(Rule):
    """A `convert_layout` through LDS right before the store to global memory.

    ## What it does
    Finds a `ttg.convert_layout` whose result, after elementwise ops only, is what a
    `tt.store` (or buffer/descriptor store) writes, and that irscope's model of the Triton
    version's lowering sends through LDS (shared memory on NVIDIA). It names the two layouts
    with irscope's layout summaries, the convert and store lines in the TTGIR, the Python line
    of the store, the tile's size and the kernel's total LDS. Converts that stay in registers
    or use lane shuffles (gfx950's epilogue in Triton 3.6+) are not reported: they need no
    LDS. A convert that feeds `tl.atomic_add` is IRS301's. Nor are a convert into the dot's
    own (MMA) layout, which brings a loaded bias or scale to the accumulator while the store
    already writes from the MMA layout, and one of 64 bytes or less, a reduction's result.
    The fix says why the store wants the other layout: a store layout narrower than the
    value's (the store pointers lack the load's facts), a coalescing choice where both
    layouts already store 16 B a lane, a reduction's result or a `tl.reshape`d tile (a slice
    layout) given a 1-D layout for its store, or a small accumulator block (1 KB or less)
    for which a tensor descriptor is not worth it.

    ## Why is this bad?
    The ROCm guide (OPTIMIZE_EPILOGUE): by default the results of the MFMA instructions are
    converted to a blocked layout, which gives `global_store` its maximum vector length,
    `global_store_dwordx4`. The conversion is done with LDS as the intermediate buffer so that
    threads can exchange data, padded to avoid bank conflicts, which usually means extra LDS
    use and may reduce occupancy. Storing the result in the MFMA layout instead (what
    `OPTIMIZE_EPILOGUE=1` does) reduces the efficiency of the global stores but, in the
    guide's words, has an insignificant influence on kernel execution time; it works with
    `tt.store` but not `tt.atomic_add`. The same trade exists on NVIDIA, where the MMA
    accumulator goes through shared memory for coalesced stores. It is paid once per tile,
    after the loop, so it is info: it matters when LDS limits occupancy or the epilogue shows
    in a profile.

    ## Example
    The GEMM epilogue on sm_90 (fixture `gemm_aligned`, Triton 3.6):

        %2 = ttg.convert_layout %c : tensor<128x128xf16, #mma> -> tensor<128x128xf16, #blocked>
        tt.store %c_ptrs_87, %2, %c_mask_93 : tensor<128x128x!tt.ptr<f16>, #blocked>

    becomes `st.shared.v4.b32`, `bar.sync` and `ldmatrix...shared.b16` before the `st.global`s in
    the PTX. Without MMA: `tile_copy_nohint` (gfx942) loads its tile in
    `blocked[1,8|8,8|4,1|1,0]` but stores in `blocked[1,1|64,1|1,4|0,1]`, because the store
    pointers carry no contiguity facts; the `.amdgcn` does `ds_write2_b32`, `s_barrier` and
    `ds_read2st64_b32` before its `global_store_short`s, and the kernel's 8192 B of LDS are
    exactly that 64x64 f16 tile.

    ## How to fix it in the kernel
    From an MFMA accumulator: store from the MFMA layout (the guide's `OPTIMIZE_EPILOGUE=1`,
    where the Triton build reads it) and accept narrower stores. On sm_90, write the tile with a
    tensor descriptor (Triton 3.3+: `tl.make_tensor_descriptor(...).store(...)`): the accumulator
    goes to shared memory once and TMA copies it out, with no `convert_layout` (fixture `tma_gemm`).
    From a blocked layout, it depends on why the layouts differ. Where the store's layout holds
    fewer contiguous elements a lane than the value's, give the store pointers the facts the load
    had (`tl.multiple_of`, `tl.max_contiguous`, 16-divisible strides, unit strides as
    `tl.constexpr`); in `tile_copy_hint` the conversion is gone and the stores are
    `global_store_dwordx4`. Where both store 16 B a lane (liger's RMSNorm backward accumulates its
    dW row as 8 f32 a lane from bf16 loads and stores 4 f32 a lane, real-world corpus), the
    convert is Triton's choice of a coalesced store: no pointer fact removes it, and once per
    program it is cheap. A reduction's result (an RMS, a logsumexp) stored 1-D costs one barrier
    per program: nothing to change.
    A store whose addresses are apart along the layout's fastest dimension (a transposed output)
    stores single elements whatever its facts: no pointer fact is offered. An inductor GEMM
    template's epilogue is inductor's code: the fix says it is a once-per-tile cost its autotuner
    already times.
    """

    code = "IRS302"
    slug = "convert-before-store"
    summary = "convert_layout through LDS right before the global store (the epilogue's LDS round trip)"
    severity = "info"
    stages = ("ttgir",)

    def check(self, ctx):
        facts = ctx.layout_facts
        if facts is None:
            return []
        module = facts.module
        user_file = facts.user_file
        stores: dict[int, list] = defaultdict(list)
        for e in facts.epilogue_converts:
            if e.lowering == "shared_memory":
                stores[e.convert].append(module.ops[e.store])
        lds_converts = sum(1 for c in facts.conversions if c.lowering == "shared_memory")
        alone = lds_converts == 1 and not any(op.canonical_name in OTHER_LDS_USERS for op in module.ops)
        shared = ctx.kernel.options.shared.value if ctx.kernel.options.shared is not None else None
        mem = memory_word(ctx)
        findings = []
        for convert, store_ops in stores.items():
            op = module.ops[convert]
            src_ty = module.values[op.operands[0]].type
            dst_ty = module.values[op.results[0]].type
            if not isinstance(src_ty, TensorType) or not isinstance(dst_ty, TensorType):
                continue
            store_ops = sorted({s.index: s for s in store_ops}.values(), key=lambda s: s.line)
            src_layout = encoding_of(src_ty)
            from_mma = getattr(src_layout, "name", None) in MMA_NAMES
            if getattr(encoding_of(dst_ty), "name", None) in MMA_NAMES:
                continue  # a bias or scale brought to the dot's layout: the store writes from the MMA layout already
            if tile_bytes(dst_ty) <= SMALL_BYTES:
                continue  # a reduction's result (a few bytes a program): the round trip costs one barrier
            python = python_of(module, store_ops[0], user_file)
            nbytes = tile_bytes(dst_ty)
            if shared is None:
                total = ""
            elif alone:
                total = f"; the kernel's {shared} B of {mem} are this conversion's scratch (its only {mem} user)"
            else:
                total = f"; kernel {mem}: {shared} B in all"
            what = "the dot result" if from_mma else "the value"
            message = (f"ttg.convert_layout of {what}, {tile_text(dst_ty)}, from "
                       f"{layout_name(facts_ref(op, module, 0), src_layout)} to "
                       f"{layout_name(facts_ref(op, module, 1), encoding_of(dst_ty))} at line {op.line} goes "
                       f"through {mem} and feeds {store_ops[0].canonical_name} at "
                       f"{lines_text(s.line for s in store_ops)}"
                       + (f" (Python line {python[1]})" if python else "")
                       + f"; {nbytes} B tile{total}")
            generated = inductor_kernel(ctx)
            if from_mma and generated is not None:  # inductor's GEMM template writes the epilogue, not the user
                fix = (f"the epilogue is inductor's GEMM template ({generated.name}, max-autotune), not code edited "
                       f"by hand: a {nbytes} B trip once per tile, which the autotuner's timing of each config "
                       "already includes; nothing to change unless this GEMM shows in a profile")
            elif from_mma:
                fix = self._fix(ctx, nbytes, op.loop_depth > 0)
            else:
                fix = blocked_fix(src_layout, encoding_of(dst_ty), stored_bits(module, store_ops[0]), nbytes,
                                  op.loop_depth > 0, slice_origin(module, op.operands[0]),
                                  fastest_stride(module, store_ops[0], encoding_of(dst_ty)))
                if generated is not None and "tl.multiple_of" in fix:
                    fix += ("; in inductor's kernel the pointers and the tiling are inductor's: it derives the "
                            "facts from the tensors' sizes and strides, so 16-divisible sizes are what give them")
            findings.append(self.finding(
                ctx, stage="ttgir", path=module.path, lines=[op.line] + [s.line for s in store_ops], python=python,
                message=message, fix=fix,
                evidence={"tile_bytes": nbytes, "kernel_lds_bytes": shared or 0, "from_mma": int(from_mma),
                          "in_loop": int(op.loop_depth > 0)},
            ))
        return findings

    @staticmethod
    def _fix(ctx, nbytes: int, in_loop: bool) -> str:
        """From an MMA accumulator."""
        if ctx.backend == "cuda":
            arch = ctx.arch or ""
            if nbytes <= SMALL_TILE and not in_loop:
                return (f"a {nbytes} B tile once per program: the trip costs a barrier and a few shared accesses, "
                        "and a tensor descriptor per tile this small saves about as much as it sets up; nothing "
                        "to change unless the epilogue shows in a profile")
            if arch.startswith("sm_") and arch[3:].isdigit() and int(arch[3:]) >= 90:
                return ("store the tile with a tensor descriptor (Triton 3.3+: tl.make_tensor_descriptor(...).store): "
                        "the accumulator goes to shared memory once and TMA writes it out, with no convert_layout")
            return "it runs once per tile after the loop; weigh it only if its shared memory limits occupancy"
        return ("store from the MFMA layout (the ROCm guide's OPTIMIZE_EPILOGUE=1, where the Triton build reads "
                "it): no LDS round trip, narrower global stores, an insignificant cost in run time per the guide")


def stored_bits(module, store) -> int | None:
    """The element width of what a store writes (its first tensor operand of data, not pointers or mask)."""
    for vid in store.operands:
        ty = module.values[vid].type
        bits = getattr(getattr(ty, "element", None), "bits", None)
        if isinstance(ty, TensorType) and bits and bits > 1:
            return bits
    return None


def lane_run(layout, bits: int | None) -> tuple[int, int] | None:
    """(contiguous elements a lane holds along the fastest dimension, bytes of one store of them, at most 16)."""
    if getattr(layout, "name", None) != "blocked" or not bits:
        return None
    run = layout.size_per_thread[layout.order[0]]
    return run, min(run * bits // 8, 16)


def slice_origin(module, vid: int, limit: int = 16):
    """The tt.reduce or tt.reshape a slice-layout value comes from, through elementwise ops of the same layout."""
    ref = getattr(module.values[vid].type, "encoding_ref", None)
    return module.producer_named(vid, ("tt.reduce", "tt.reshape"), limit,
                                 follow=lambda v: getattr(module.values[v].type, "encoding_ref", None) == ref)


def fastest_stride(module, store, layout):
    """How far apart in memory (elements) the store's addresses are along its layout's fastest dimension."""
    if getattr(layout, "name", None) != "blocked":
        return None
    strides = address_strides(PointerStrides(module), store)
    dim = layout.order[0]
    return strides[dim] if strides is not None and dim < len(strides) else None


def blocked_fix(src, dst, bits: int | None, nbytes: int, in_loop: bool, origin=None, stride=None) -> str:
    """Why a value not from a dot is stored in another layout, and what (if anything) changes that."""
    when = f"{nbytes} B each iteration of its loop" if in_loop else f"{nbytes} B once per program"
    cheap = "" if in_loop else ", cheap"
    if getattr(src, "name", None) == "slice":
        if origin is not None and origin.canonical_name == "tt.reshape":
            what = f"a tile flattened by tl.reshape (TTGIR line {origin.line}), so its layout is a slice of the 2-D one"
        elif origin is not None:
            what = f"a reduction's result (TTGIR line {origin.line}), held in a slice of the reduced layout"
        else:
            what = "in a slice layout (each element on several lanes)"
        return (f"the value is {what}, and Triton gives the store its own 1-D layout: {when}, one barrier{cheap}; "
                "nothing in the pointers to fix")
    if stride is not None and stride != 1 and not isinstance(stride, str):
        # A strided (transposed) output: adjacent elements of the tile are `stride` apart, no fact makes them adjacent.
        return (f"the store's addresses are {stride} elements apart along the tile's fastest dimension (dim "
                f"{dst.order[0]}: a transposed or strided output), so each lane stores single elements whatever "
                f"the layout and no pointer fact widens it; the convert regroups the value for that store: {when}"
                f"{cheap}")
    have, want = lane_run(src, bits), lane_run(dst, bits)
    if have is None or want is None:
        return (f"the store's layout follows the store pointers' facts (tl.multiple_of / tl.max_contiguous, "
                f"16-divisible strides); {when}")
    if want[1] < have[1]:
        return ("the store's layout follows what Triton knows about the store pointers; give them the load's "
                "facts (tl.multiple_of / tl.max_contiguous, 16-divisible strides, unit strides as tl.constexpr) "
                f"so the value can be stored in the layout it has ({have[1]} B a lane instead of {want[1]})")
    if want[1] == have[1]:
        return (f"both layouts store {want[1]} B a lane (the value holds {have[0]} contiguous elements a lane, the "
                f"store takes {want[0]}): the convert is Triton's choice of a fully coalesced store, not a missing "
                f"pointer fact; {when}{cheap}; nothing in the pointers to fix")
    return (f"Triton converts to store {want[1]} B a lane where the value holds {have[1]}: the round trip "
            f"({when}) buys wider stores; it goes away only if the value is computed with {want[0]} contiguous "
            "elements a lane (from loads with the store's pointer facts)")


def facts_ref(op, module, side: int) -> str:
    """The layout of a convert's operand (side 0) or result (side 1) as the TTGIR writes it."""
    vid = op.operands[0] if side == 0 else op.results[0]
    ty = module.values[vid].type
    return getattr(ty, "encoding_ref", None) or "?"
