"""IRS501 mfma-32x32."""

from __future__ import annotations

import re
from collections import defaultdict

from irscope.engine.rule import Rule

ADVICE = {"gfx942": "ROCm's MI300X guide recommends 16x16 MFMA",
          "gfx950": "ROCm's MI300X guide recommends 16x16 MFMA; measure it on gfx950"}
SHAPE = re.compile(r"32x32x(\d+)")


def sixteen(opcode: str) -> str:
    """The 16x16 form with the same types: v_mfma_f32_32x32x8_f16 -> v_mfma_f32_16x16x16_f16."""
    return SHAPE.sub(lambda m: f"16x16x{2 * int(m.group(1))}", opcode, count=1)


class Mfma32x32(Rule):
    """32x32 MFMA instructions where the 16x16 form exists (gfx942, gfx950).

    ## What it does
    Finds `v_mfma_*_32x32xK_*` instructions in a gfx942 (MI300) or gfx950 (MI350) kernel
    and reports them per `tl.dot` (Python line), with their count and how many are in
    loops. Every single-block 32x32xK MFMA on these targets has a 16x16x(2K) form with the
    same operand types (`v_mfma_f32_32x32x8_f16` / `v_mfma_f32_16x16x16_f16`,
    `32x32x16_fp8_fp8` / `16x16x32_fp8_fp8`, gfx950 `32x32x16_f16` / `16x16x32_f16`), so
    Triton can always be asked for it. The multi-block `_2b` forms are left alone.

    ## Why is this bad?
    ROCm's workload guide for MI300X: "MI16x16 outperforms MI32x32 due to its superior
    power efficiency", and "for GEMM kernels on an MI300X accelerator, `mfma_16x16`
    typically outperforms `mfma_32x32`, even for large tile/GEMM sizes". Triton picks 32x32
    by default for 128x128 tiles (Triton 3.0 to 3.9 on gfx942 in the fixtures). It is a
    tuning suggestion, not a defect: measure.

    ## Example
    `matmul_kernel` (fixture `gemm_aligned`, gfx942, Triton 3.6, 128x128x64 tiles, default
    options) has 96 `v_mfma_f32_32x32x8_f16`, all from `acc = tl.dot(a, b, acc)` (32 of
    them in the K loop's body). Built with `matrix_instr_nonkdim=16` (fixture `gemm_mfma16`)
    it has 192 `v_mfma_f32_16x16x16_f16` instead (`before_after/mfma_nonkdim`).

    ## How to fix it in the kernel
    Pass `matrix_instr_nonkdim=16` to the launch (or add it to each `triton.Config` of an
    autotuned kernel), then compare the timings.
    """

    code = "IRS501"
    slug = "mfma-32x32"
    summary = "32x32 MFMA where the 16x16 form exists; ROCm recommends 16x16 (matrix_instr_nonkdim=16)"
    severity = "info"
    stages = ("amdgcn",)
    backends = ("hip",)

    def check(self, ctx):
        program = ctx.program("amdgcn")
        arch = (program.target or ctx.arch) if program is not None else None
        if arch not in ADVICE:
            return []
        findings = []
        for fn in program.functions:
            by_dot = defaultdict(list)
            for i in fn.instructions:
                m = i.matrix
                if m is not None and m.family == "mfma" and m.m == 32 and m.n == 32 and m.blocks == 1:
                    by_dot[(i.source.file, i.source.line) if i.source else None].append(i)
            depth = ctx.graph(program, fn).instruction_depth if by_dot else ()
            for dot, instrs in by_dot.items():
                opcodes = sorted({i.opcode for i in instrs})
                in_loop = sum(1 for i in instrs if depth[i.index] > 0)
                where = f"{in_loop} in loops" if in_loop else "none in a loop"
                source = f"the tl.dot at line {dot[1]}" if dot else "no source line"
                names = ", ".join(f"{op} (16x16: {sixteen(op)})" for op in opcodes)
                findings.append(self.finding(
                    ctx, stage="amdgcn", path=program.path, lines=[i.line for i in instrs], python=dot,
                    message=f"{len(instrs)} 32x32 MFMAs ({where}) from {source}: {names}; {ADVICE[arch]}",
                    fix="matrix_instr_nonkdim=16 in the launch or triton.Config, then measure",
                    evidence={"count": len(instrs), "in_loop": in_loop},
                ))
        return findings
