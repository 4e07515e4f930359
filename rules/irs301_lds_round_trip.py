"""IRS301 lds-round-trip."""

from __future__ import annotations

from collections import defaultdict

from irscope.ir.types import TensorType, encoding_of
from irscope.engine.rule import Rule

from . import _irs301_causes as causes
from ._inductor import inductor_kernel
from . import _irs301_tiles as tiles
from ._ttgir_text import layout_name, lines_text, memory_word, python_of, tile_bytes, tile_text

FIX_LAYOUT = ("make the producer and the consumer agree on the layout: find the op at the Python line that needs "
              "the other layout (a reduction broadcast back, tl.trans/tl.reshape/tl.permute, a dot operand) and "
              "restructure it, or move the conversion out of the loop")


class LdsRoundTrip(Rule):
    """Register values sent through LDS (shared memory) and read back into registers.

    ## What it does
    Reads the TTGIR and reports two kinds of register -> LDS -> register trips, and says what
    the tile is, since the cause and the fix follow from that:

    - a tile written to an LDS buffer (`ttg.local_alloc %v` or `ttg.local_store`) and read
      back with `ttg.local_load`. A GEMM operand being staged is not reported: a tile that is
      what global loads returned (moved by `amdg.in_thread_transpose`, `ttg.convert_layout`,
      `tt.trans` or `tt.reshape`, cast, or a constant the software pipeliner stores for a stage
      past the loop's end) and that a dot reads, possibly after casts (a raw fp8/int8 tile
      converted after the read: `tt.bitcast`, `tt.fp_to_fp`, `arith.extf`/`sitofp`/...),
      broadcasts and elementwise work in the dot-operand layout (a scale applied after the
      read), or a loop's iter_args (the pipeliner's prefetch, as the loop's init or its
      yield). The others are named by what the backward walk from the written value finds:
      *a dot's result* (attention's P, a chained product), *loop-carried state* (a
      recurrence's h, updated every iteration and read by a dot in the same iteration),
      *dequantized in registers from a loaded N-bit tile*, *computed in registers from
      reductions*, or *computed in registers*;
    - a `ttg.convert_layout` that irscope's model of the Triton version's lowering sends
      through LDS (data crossing warps), unless it feeds a `tt.store` (IRS302 reports those)
      or takes a just-loaded tile to a dot operand (staging written as a convert). The message
      says whether the value is loaded, a reduction's result, a dot's accumulator (for an
      atomic), a value between two dots' MMA layouts, loop-carried state or computed. A
      reduction's result of 64 B or less converted outside loops (a norm's few row sums, a
      barrier once per program) is not reported. A tile a loop loads from the same addresses
      every iteration (its address computed before the loop) and converts each time is said to
      be loop-invariant: load it once before the loop (for an inductor kernel the fix says the
      load is inductor's, with nothing to edit).

    It names the layout written and the layout read, with irscope's layout summaries, the
    ops and their TTGIR lines, and the kernel's Python line. A trip is a warning when its LDS
    write is inside a loop and the kernel has a knob for it (two chained dots whose MFMA
    layouts differ, a dequantization that could be staged narrow, a transpose or reshape that
    wants the other layout); a trip outside loops, or one nothing in the kernel can change (the
    state of a recurrence, a reduction's result, a loaded vector meeting a tile of another
    layout, two dots of different element types), is info, with its cost in bytes and the
    reason in the fix text. Copies of one trip that the software pipeliner made (the loop
    body and its peeled last iteration) are one finding.

    ## Why is this bad?
    An LDS round trip is an LDS write, a barrier and an LDS read on the path between two
    register computations, plus the LDS it occupies. The ROCm guide's "IR analysis" section
    reads exactly this out of TTGIR for an int4-KV dequantization: values computed in
    registers, stored in LDS for a transpose, loaded back, and stored again to become a dot
    operand, "it uses the LDS twice". Inside a loop the trip is paid every iteration, and a
    computed tile must be written and read back in the same iteration, right before the dot.

    ## Example
    The int4 weight-only GEMM (fixture `int4_gemm`, Triton 3.6, gfx942) dequantizes B in
    registers on kernel line 40, `b = (b.to(tl.float16) - 8.0) * scale[None, :]`. The TTGIR
    then sends the f16 tile through LDS inside the K loop:

        %b_92 = ttg.local_alloc %b_91 : (tensor<64x64xf16, #linear>) -> !ttg.memdesc<64x64xf16, #shared1, #smem>
        %b_93 = ttg.local_load %b_92 : !ttg.memdesc<64x64xf16, #shared1, #smem>
                -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 4}>>

    and the loop in the `.amdgcn` does 8 `ds_write_b32`, `s_waitcnt lgkmcnt(0)`, `s_barrier`
    and 4 `ds_read_b64` right before `v_mfma_f32_32x32x8_f16`. The A tile of the same loop
    (loaded, stored, read back as a dot operand) is staging and is not reported.

    SageAttention's `_attn_fwd` (real-world corpus, num_warps=8, BLOCK_M=128, gfx942) writes
    its f16 128x64 P tile, the int8 QK^T dot's result in `mfma.v3[32x32x16|w8,1|T]`, to LDS
    and reads it back as operand A of the PV dot in `mfma.v3[32x32x8|w4,2|T]`: 16 KB every
    KV step, a warning whose fix names num_warps=4 or matrix_instr_nonkdim=16. Its K tile
    (buffer_load i8, local_store, read into the KV loop's iter_args) is staging.

    ## How to fix it in the kernel
    The fix text follows from what the tile is:

    - *a dot's result read by the next dot* (attention's P): on AMD, Triton spreads the first
      dot of a chain over all warps along M and the second over at most BLOCK_M/mDim warps, so
      with num_warps=8, BLOCK_M=128 and 32x32 MFMAs the second dot gets 4x2 warps and P (and
      the softmax's alpha/l rows) crosses warps every iteration. `num_warps=4`, or
      `matrix_instr_nonkdim=16` (16-row MFMAs, 8 row tiles for 8 warps), gives both dots one
      layout and Triton converts P in registers (tests compile exactly this, int8 QK^T and f16
      PV as in SageAttention, both ways). For 16- or 8-bit operands only: an f32 operand
      (kWidth 1) goes through LDS even when the layouts match. Other chains (operand B, dots of
      different element types, a result split over warps along the next dot's K) have no knob
      irscope knows of, and the fix says so;
    - *dequantized weights*: when the raw tile is narrower than the dequantized one, keep the
      work before the dot elementwise on the tile as loaded (pack the weights offline in the
      order the dot operand reads them, no `tl.join`/`tl.permute`/`tl.reshape` interleave in
      the loop) so that Triton stages the narrow raw tile and converts after the LDS read; when
      each packed word is loaded once per value it holds (a raw tile as large as the result, as
      in gemlite), staging it raw would move more bytes: load each word once and pack offline;
      when the work is already a cast times one scalar (vLLM's fp8 KV cache with a per-tensor
      scale: fp_to_fp, mulf, truncf), Triton still stages the result, since it moves only a bare
      cast past the LDS read: cast the loaded tile straight to the dot's type and apply the scale
      to the dot's result (`tl.dot(q, k.to(q.dtype)) * k_scale`); Triton then stages the fp8 tile
      (tests compile both forms);
    - *loop-carried state*, *a reduction's result*, *a loaded vector meeting a tile of another
      layout*: nothing in the kernel's hands; the finding is info and gives the bytes;
    - *a transpose or reshape next to a convert*: load or pack the data in the order the
      consumer reads it, or move the conversion out of the loop.
    """

    code = "IRS301"
    slug = "lds-round-trip"
    summary = "register values put through LDS and read back (round trips, convert_layout via LDS)"
    severity = "warning"
    stages = ("ttgir",)

    def check(self, ctx):
        facts = ctx.layout_facts
        if facts is None:
            return []
        module = facts.module
        user_file = facts.user_file
        return self._round_trips(ctx, facts, module, user_file) + self._conversions(ctx, facts, module, user_file)

    # -- ttg.local_alloc / local_store ... local_load ------------------------------------
    def _round_trips(self, ctx, facts, module, user_file):
        users = tiles.users_of(module)
        mem = memory_word(ctx)
        groups: dict[tuple, list] = defaultdict(list)
        for trip in facts.round_trips:
            writers = [module.ops[i] for i in trip.writers]
            readers = [module.ops[i] for i in trip.readers]
            if not writers or not readers or not all(r.results for r in readers):
                continue
            dots = [tiles.dots_reached(module, r.results[0], users) for r in readers]
            loaded = tiles.kind_of([tiles.trace(module, w.operands[0]) for w in writers]) == "loaded"
            if loaded and all(dots):
                continue  # a GEMM operand staged through LDS (raw fp8/int8 converted after the read included)
            key = (trip.stored_layout, trip.shared_layout, trip.loaded_layout, trip.element, trip.shape,
                   trip.python_lines)
            groups[key].append((trip, writers, readers, loaded, all(dots)))
        findings = []
        for members in groups.values():
            _, writers0, readers0, loaded, as_dot = members[0]
            writers = sorted({w.index: w for _, ws, _, _, _ in members for w in ws}.values(), key=lambda o: o.line)
            readers = sorted({r.index: r for _, _, rs, _, _ in members for r in rs}.values(), key=lambda o: o.line)
            stored_ty = module.values[writers0[0].operands[0]].type
            shared_ty = module.values[writers0[0].results[0] if writers0[0].canonical_name == "ttg.local_alloc"
                                      else writers0[0].operands[1]].type
            loaded_ty = module.values[readers0[0].results[0]].type
            looped = [w for w in writers if w.loop_depth > 0]
            outside = [w for w in writers if w.loop_depth == 0]
            stored = layout_name(members[0][0].stored_layout, encoding_of(stored_ty))
            shared = layout_name(members[0][0].shared_layout, encoding_of(shared_ty))
            read_layout = encoding_of(loaded_ty)
            read = layout_name(members[0][0].loaded_layout, read_layout)
            if getattr(read_layout, "name", None) == "dot_op":
                operand = "AB"[read_layout.op_idx] if read_layout.op_idx in (0, 1) else str(read_layout.op_idx)
                read = f"dot operand {operand}, {read},"
            elif as_dot:
                read = f"{read}, then moved in registers into a dot operand,"
            if looped:
                where = f"in a loop ({lines_text(w.line for w in looped)})"
                if outside:
                    where += (f"; the write at {lines_text(w.line for w in outside)} is a copy outside the loop, "
                              "from the same Python line")
            else:
                where = "outside loops"
            python = python_of(module, writers[0], user_file)
            nbytes = tile_bytes(stored_ty)
            traced = [tiles.trace(module, w.operands[0]) for w in (looped or writers)]
            kind = "loaded" if loaded else tiles.kind_of(traced)
            if loaded or not as_dot:
                cause = causes.Cause("loaded from global memory" if loaded else "computed in registers",
                                     FIX_LAYOUT, True)
            else:
                cause = causes.round_trip_cause(module, kind, traced, stored_ty, read_layout, None, nbytes,
                                                bool(looped))
            write_names = sorted({w.canonical_name for w in writers})
            findings.append(self.finding(
                ctx, stage="ttgir", path=module.path,
                lines=[o.line for o in writers + readers], python=python,
                severity="warning" if looped and cause.knob else "info",
                message=f"{tile_text(stored_ty)} tile, {cause.what}, layout {stored}, is written to {mem} as "
                        f"{shared} by {'/'.join(write_names)} at {lines_text(w.line for w in writers)} and read back "
                        f"as {read} by ttg.local_load at {lines_text(r.line for r in readers)}; {where}; "
                        f"{nbytes} B per trip" + (f"; Python line {python[1]}" if python else ""),
                fix=cause.fix,
                evidence={"writes": len(writers), "reads": len(readers), "writes_in_loop": len(looped),
                          "tile_bytes": nbytes, "feeds_dot": int(as_dot), "computed": int(not loaded),
                          "knob": int(cause.knob)},
            ))
        return findings

    # -- ttg.convert_layout through LDS --------------------------------------------------
    def _conversions(self, ctx, facts, module, user_file):
        epilogue = {e.convert for e in facts.epilogue_converts if e.lowering == "shared_memory"}
        users = tiles.users_of(module)
        mem = memory_word(ctx)
        generated = inductor_kernel(ctx)
        findings = []
        for conv in facts.conversions:
            if conv.lowering != "shared_memory" or conv.op in epilogue:
                continue
            op = module.ops[conv.op]
            src_ty = module.values[op.operands[0]].type
            dst_ty = module.values[op.results[0]].type
            if not isinstance(src_ty, TensorType) or not isinstance(dst_ty, TensorType):
                continue
            if tiles.trace(module, op.operands[0]).loaded and tiles.dots_reached(module, op.results[0], users):
                continue  # a just-loaded tile converted on its way to a dot: operand staging, as local_alloc is
            consumers = sorted({(u.line, u.canonical_name) for u in users.get(op.results[0], ())})
            used = "; used by " + ", ".join(f"{name} at line {line}" for line, name in consumers) if consumers else ""
            python = python_of(module, op, user_file)
            looped = op.loop_depth > 0
            nbytes = tile_bytes(dst_ty)
            cause = causes.conversion_cause(module, ctx.backend, op, consumers, nbytes, looped, generated)
            if cause.what == causes.REDUCTION_RESULT and not looped and nbytes <= causes.SMALL_REDUCTION_BYTES:
                continue  # a few bytes once per program (a norm's row sums): one barrier, noise (issue 21)
            findings.append(self.finding(
                ctx, stage="ttgir", path=module.path, lines=[op.line], python=python,
                severity="warning" if looped and cause.knob else "info",
                message=f"ttg.convert_layout of {tile_text(dst_ty)} ({cause.what}) from "
                        f"{layout_name(conv.source, encoding_of(src_ty))} to "
                        f"{layout_name(conv.target, encoding_of(dst_ty))} at line {op.line} goes through {mem} "
                        f"(irscope: {conv.reason.rstrip('.')}); {'in a loop' if looped else 'outside loops'}{used}; "
                        f"{nbytes} B tile" + (f"; Python line {python[1]}" if python else ""),
                fix=cause.fix,
                evidence={"tile_bytes": nbytes, "in_loop": int(looped), "loop_depth": op.loop_depth,
                          "knob": int(cause.knob)},
            ))
        return findings
