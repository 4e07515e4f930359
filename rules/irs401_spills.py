"""IRS401 spills."""

from __future__ import annotations

from collections import Counter

from irscope.isa.model import LOCAL_LOAD, LOCAL_STORE
from irscope.ir.mlir import DOT_OPS
from irscope.model.kernel import AmdResources, NvidiaResources
from irscope.occupancy.amd import AMD_ARCHES, vgprs_for_waves
from irscope.engine.rule import Rule

def _fix(ctx) -> str:
    """Keep fewer values live, in the kernel's own terms: a GEMM's tiles and stages, another kernel's
    block; the register cap of the kernel's own target."""
    has_dot = ctx.ttgir is not None and any(True for _ in ctx.ttgir.ops_named(*DOT_OPS))
    tiles = ("smaller BLOCK_M/BLOCK_N (or BLOCK_K), more num_warps for the same tile, fewer num_stages"
             if has_dot else "a smaller block per program (BLOCK_SIZE, XBLOCK/RBLOCK), or more num_warps for "
                              "the same block")
    cap = ("do not ask waves_per_eu for more waves than the registers allow" if ctx.backend == "hip"
           else "raise or drop maxnreg where it is set")
    capped = _waves_per_eu_cap(ctx)
    if capped:
        return f"{capped}; otherwise keep fewer values live: {tiles}"
    return f"keep fewer values live: {tiles}; {cap}"


def _waves_per_eu_cap(ctx) -> str | None:
    """waves_per_eu=N holds a kernel to 512 // N VGPRs (rounded down to the granule); one that uses all of
    them and spills VGPRs spills because of the cap (tutorial 03's 64x64 config, waves_per_eu=8: 64 VGPRs,
    7 spilled): ask for fewer waves first."""
    res, option, arch = ctx.resources, ctx.kernel.options.waves_per_eu, AMD_ARCHES.get(ctx.arch or "")
    if not isinstance(res, AmdResources) or option is None or arch is None or not _value(res.vgpr_spill):
        return None
    asked, used = option.value, _value(res.vgpr_total)
    budget = vgprs_for_waves(arch, asked) if asked and asked > 1 else None
    if budget is None or used < budget:
        return None
    fewer = vgprs_for_waves(arch, asked - 1)
    return (f"waves_per_eu={asked} holds the kernel to {budget} VGPRs (.vgpr_count {used}) and LLVM spills the rest: "
            f"ask for fewer waves (waves_per_eu={asked - 1} allows {fewer} VGPRs) or drop it, and check "
            f".vgpr_spill_count is 0")


class Spills(Rule):
    """Registers spilled to scratch (AMD) or to local memory (NVIDIA).

    ## What it does
    Reports a kernel whose compiler ran out of registers. On AMD it reads the code object
    metadata (`.vgpr_spill_count`, `.sgpr_spill_count`, `.private_segment_fixed_size`, the
    scratch bytes per lane) and counts the scratch accesses in the ISA: `scratch_load_*` /
    `scratch_store_*` on gfx942, gfx950 and RDNA, and on gfx90a the `buffer_load_dword` /
    `buffer_store_dword` that go through the scratch descriptor. On NVIDIA it reads the
    cubin's stack frame (`EIATTR_MIN_STACK_SIZE`, where ptxas puts register spills) and its
    `.nv.local` section, and counts `ld.local`/`st.local` in the PTX (and `LDL`/`STL` in
    the SASS when irscope disassembles the cubin). SGPR spills with no scratch, which LLVM
    keeps in VGPR lanes (`v_writelane_b32`), are reported as info, and so is spill code that
    runs once per thread: 64 accesses or fewer, none in a loop, or on NVIDIA without the
    SASS a stack frame of 32 bytes or less. A local array is not a spill: the PTX's own
    `ld.local`/`st.local` are the accesses of arrays LLVM allocated (`__local_depot`), and
    the frame beyond them is what ptxas spilled. In Triton kernels that array is nearly
    always libdevice's sin/cos argument reduction for huge arguments (`__cudart_i2opi_f`),
    reported as info since it runs only for such arguments.

    ## Why is this bad?
    A spill turns a register access into a memory round trip: a scratch store, and later a
    scratch load and a wait on it, through the same vector memory path as the kernel's own
    global loads (`vmcnt` on AMD; local memory is cached in L1 on NVIDIA but still costs
    LSU issue and latency). Spill code in a loop runs every iteration. The scratch (local)
    memory itself is allocated per lane for every resident wave.

    ## Example
    `spill_kernel` (fixture `spill`) keeps a 64x512 fp32 tile in one wavefront across a row
    reduction. On gfx942 (Triton 3.6) the metadata says `.vgpr_spill_count: 362` and
    `.private_segment_fixed_size: 1452`, and the ISA has 249 scratch accesses:

        scratch_store_dwordx2 off, v[8:9], off offset:16 ; 8-byte Folded Spill     (line 1071)
        scratch_load_dwordx2 v[4:5], off, off offset:16 ; 8-byte Folded Reload     (line 5476)

    On sm_90 the same kernel (16x512) has a 488-byte stack frame per thread (cuobjdump
    `STACK:488`) and 92 `STL` / 92 `LDL` in its SASS. The GEMM built with
    `waves_per_eu=3` (fixture `gemm_wpe3`, gfx942, Triton 3.6) spills 53 VGPRs: 39 of its
    111 scratch accesses are in the K loop. Inductor's RoPE kernels for an H100 (the
    real-world corpus) declare `.local .align 4 .b8 __local_depot0[28]` for sin/cos: a 32-byte
    frame with no spill (info); four of their configs have a 72-byte frame, 40 bytes of which
    are 9 spilled registers (`STL [R1+0x20]` ... `[R1+0x40]` in the SASS).

    ## How to fix it in the kernel
    Keep fewer values live at once: smaller `BLOCK_M`/`BLOCK_N` (or `BLOCK_K`), more
    `num_warps` for the same tile so each thread holds less, fewer `num_stages`. Do not ask
    `waves_per_eu` for more waves than the kernel's registers allow (it caps the register
    budget and LLVM spills the rest): where a kernel spills at the budget of its
    `waves_per_eu=N`, the fix names the cap first and what N-1 waves allow (Triton's
    tutorial 03 GEMM, 64x64 config with `waves_per_eu=8` on gfx942: 64 VGPRs, 7 spilled;
    7 waves allow 72). On NVIDIA raise or drop `maxnreg`. Restructure
    reductions that hold a whole tile live (two passes over the data, or a loop over
    chunks).
    """

    code = "IRS401"
    slug = "spills"
    summary = "registers spilled to scratch / local memory"
    severity = "warning"
    stages = ("resources",)

    def check(self, ctx):
        if isinstance(ctx.resources, AmdResources):
            return _amd(self, ctx, ctx.resources)
        if isinstance(ctx.resources, NvidiaResources):
            return _nvidia(self, ctx, ctx.resources)
        return []


def _value(fact) -> int:
    return int(fact.value) if fact is not None and fact.value else 0


def _accesses(ctx, isa):
    """(program, [(instruction, in a loop)]) of the scratch/local accesses of one assembly."""
    program = ctx.program(isa)
    if program is None:
        return None, []
    found = []
    for fn in program.functions:
        local = [i for i in fn.instructions if i.kind in (LOCAL_LOAD, LOCAL_STORE)]
        if local:
            depth = ctx.graph(program, fn).instruction_depth
            found.extend((i, depth[i.index] > 0) for i in local)
    return program, found


def _describe(found, what: str) -> tuple[str, tuple[str, int] | None]:
    """'249 scratch accesses (125 loads, 124 stores; none in a loop), most (122) attributed to line 26'."""
    loads = sum(1 for i, _ in found if i.kind == LOCAL_LOAD)
    in_loop = sum(1 for _, looped in found if looped)
    where = f"{in_loop} in loops" if in_loop else "none in a loop"
    # Spill code takes the debug location of the code it was inserted for: name the line most
    # of it belongs to, from the accesses in loops when there are any.
    pool = [i for i, looped in found if looped] or [i for i, _ in found]
    lines = Counter((i.source.file, i.source.line) for i in pool if i.source is not None)
    text = f"{len(found)} {what} ({loads} loads, {len(found) - loads} stores; {where})"
    if not lines:
        return text, None
    (file, line), n = lines.most_common(1)[0]
    return text + f", most ({n}) attributed to line {line}", (file, line)


def _amd(rule, ctx, res: AmdResources):
    vgprs, sgprs, scratch = _value(res.vgpr_spill), _value(res.sgpr_spill), _value(res.scratch_bytes)
    program, found = _accesses(ctx, "amdgcn")
    if not (vgprs or sgprs or scratch or found):
        return []
    facts = [f for f in (res.vgpr_spill, res.sgpr_spill, res.scratch_bytes) if f is not None and f.value]
    path = program.path if program is not None else facts[0].origin.path
    meta_lines = [f.origin.line for f in facts if f.origin.line is not None and f.origin.path == path]
    evidence = {"vgpr_spills": vgprs, "sgpr_spills": sgprs, "scratch_bytes": scratch, "accesses": len(found),
                "in_loop": sum(1 for _, looped in found if looped)}
    if not found and not scratch:  # SGPR spills only: LLVM parks them in VGPR lanes, not in memory
        return [rule.finding(
            ctx, stage="amdgcn", path=path, lines=meta_lines, severity="info", evidence=evidence,
            message=f"{sgprs} SGPRs spilled (.sgpr_spill_count) with no scratch (.private_segment_fixed_size 0): "
                    f"LLVM keeps them in VGPR lanes (v_writelane_b32 / v_readlane_b32), which costs VALU "
                    f"instructions and VGPRs rather than memory traffic",
            fix="lower the SGPR pressure: fewer distinct pointers, strides and loop bounds live at once "
                "(tl.constexpr strides, fewer kernel arguments)")]
    parts = []
    if vgprs:
        parts.append(f"{vgprs} VGPRs spilled (.vgpr_spill_count)")
    if sgprs:
        parts.append(f"{sgprs} SGPRs spilled (.sgpr_spill_count)")
    parts.append(f"{scratch} B of scratch per lane (.private_segment_fixed_size)")
    message = ", ".join(parts)
    python = None
    if found:
        text, python = _describe(found, "scratch accesses")
        message += f": {text}"
    return [rule.finding(ctx, stage="amdgcn", path=path, lines=[i.line for i, _ in found] + meta_lines,
                         python=python, message=message, fix=_fix(ctx), evidence=evidence, severity=_severity(found))]


def _nvidia(rule, ctx, res: NvidiaResources):
    stack, local = _value(res.stack_bytes), _value(res.local_bytes)
    ptx, in_ptx = _accesses(ctx, "ptx")
    sass, in_sass = _accesses(ctx, "sass")
    if not (stack or local or in_ptx or in_sass):
        return []
    depot = _value(res.local_depot)
    if depot and not local and not in_sass and res.stack_bytes is not None and stack == 0:
        return []  # ptxas kept the PTX's local array in registers: the cubin has no stack frame, nothing spills
    if depot and in_ptx and not local and stack <= _frame_of(depot):
        return [_local_array(rule, ctx, res, ptx, in_ptx)]
    cubin = next((f.origin.path for f in (res.stack_bytes, res.local_bytes) if f is not None), None)
    message = _nvidia_memory(res, ptx, in_ptx)
    evidence = {"stack_bytes": stack, "local_bytes": local, "ptx_accesses": len(in_ptx),
                "sass_accesses": len(in_sass)}
    # Point at the instructions when an assembly has them: SASS (the spills themselves), else PTX.
    program, found, what = (sass, in_sass, "LDL/STL") if in_sass else (ptx, in_ptx, "ld.local/st.local")
    if found and not (depot and program is ptx):  # the PTX's accesses are the array's, not the spills'
        text, python = _describe(found, f"{what} accesses")
        message += f"; {text}"
        evidence["in_loop"] = sum(1 for _, looped in found if looped)
        return [rule.finding(ctx, stage=program.isa, path=program.path, lines=[i.line for i, _ in found],
                             python=python, message=message, fix=_fix(ctx), evidence=evidence,
                             severity=_severity(found))]
    # Without the SASS the spills' places are unknown; a frame of a few words holds a few registers.
    small = not local and stack - (_frame_of(depot) if depot else 0) <= SMALL_FRAME
    return [rule.finding(ctx, stage="cubin", path=cubin or ctx.kernel.directory, fix=_fix(ctx), evidence=evidence,
                         severity="info" if small else "warning",
                         message=message + " (`irscope scan --sass` lists the STL/LDL)")]



def _nvidia_memory(res: NvidiaResources, ptx, in_ptx) -> str:
    """What the cubin's stack frame and .nv.local hold, and where the PTX has no local accesses, whose they are."""
    stack, local, depot = _value(res.stack_bytes), _value(res.local_bytes), _value(res.local_depot)
    parts = []
    if stack and depot:  # PTX ld.local/st.local are the array's; what ptxas spilled is the rest of the frame
        parts.append(f"a {stack}-byte stack frame per thread (EIATTR_MIN_STACK_SIZE in the cubin): "
                     f"{stack - _frame_of(depot)} B of spilled registers beside {_array_of(res)}")
    elif stack:
        parts.append(f"a {stack}-byte stack frame per thread (EIATTR_MIN_STACK_SIZE in the cubin)")
    if local:
        parts.append(f"{local} B of static local memory (.nv.local)")
    message = " and ".join(parts) or "local memory"
    if ptx is not None and not in_ptx:
        calls = any(i.opcode.split(".")[0] == "call" for fn in ptx.functions for i in fn.instructions)
        message += ": the PTX has no ld.local/st.local, so it holds what ptxas spilled" + \
            (" and the frames of its calls" if calls else "")
    return message

# Spill code outside every loop, a few accesses in all, runs once per thread: it costs little
# (the real-world ledger found such warnings false; fixtures/real_world/ledger/IRS401.jsonl).
FEW_ACCESSES = 64
SMALL_FRAME = 32  # bytes of stack per thread: 8 spilled registers at most


def _severity(found) -> str:
    in_loop = any(looped for _, looped in found)
    return "warning" if in_loop or len(found) > FEW_ACCESSES else "info"


def _frame_of(depot: int) -> int:
    """The stack frame a local array of `depot` bytes takes: ptxas keeps frames 8-byte aligned."""
    return -(-depot // 8) * 8


def _array_of(res: NvidiaResources) -> str:
    if res.trig_reduction is not None:
        return f"the {res.local_depot.value}-byte local array of libdevice's sin/cos argument reduction"
    return f"a {res.local_depot.value}-byte local array (__local_depot in the PTX)"


def _frame_words(res: NvidiaResources) -> str:
    if res.stack_bytes is None:  # no cubin: what ptxas makes of the array is not known
        return "the PTX's local memory is"
    return f"the {res.stack_bytes.value}-byte stack frame is"


def _local_array(rule, ctx, res: NvidiaResources, ptx, found):
    """No register spilled: the frame is a local array LLVM allocated. In Triton kernels it is
    nearly always libdevice's sin/cos reduction for huge arguments (Payne-Hanek, `__cudart_i2opi_f`),
    which runs only for such arguments; any other array is indexed by a run-time value."""
    text, python = _describe(found, "ld.local/st.local accesses")
    evidence = {"stack_bytes": _value(res.stack_bytes), "local_depot": res.local_depot.value,
                "ptx_accesses": len(found), "in_loop": sum(1 for _, looped in found if looped)}
    lines = [i.line for i, _ in found]
    evidence["depot_line"] = res.local_depot.origin.line
    if res.trig_reduction is not None:
        return rule.finding(
            ctx, stage="ptx", path=ptx.path, lines=lines, python=python,
            severity="info", evidence=evidence,
            message=f"no register spilled: {_frame_words(res)} {_array_of(res)} "
                    f"(__local_depot at .ptx line {res.local_depot.origin.line}, filled from __cudart_i2opi_f: the "
                    f"Payne-Hanek slow path for arguments too large for the fast reduction); {text}, all on "
                    f"that path",
            fix="nothing to do while the sin/cos arguments stay moderate (angles, positions times "
                "frequencies): the slow path never runs; where they can be huge, reduce them first "
                "(x - 2*pi*round(x / (2*pi))) or use an approximate sin/cos where its accuracy suffices")
    return rule.finding(
        ctx, stage="ptx", path=ptx.path, lines=lines, python=python, severity=_severity(found), evidence=evidence,
        message=f"no register spilled: {_frame_words(res)} {_array_of(res)}, an "
                f"array LLVM could not keep in registers because it is indexed by a run-time value; {text}",
        fix="index the array only with compile-time constants (unrolled tl.static_range loops, tl.where "
            "selects), or keep the values in a tensor, so that they stay in registers")
