"""Kernels that tests/test_rule_irs101_irs102_narrow_global.py compiles with Triton 3.9, one per
global-memory op family the width rules read (see the test for the targets and options)."""
import triton
import triton.language as tl


@triton.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Pipelined operands: async copies into LDS (cp.async on sm_90, buffer_load ... lds on gfx950)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)  # A_LOAD
        b = tl.load(b_ptrs)  # B_LOAD
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def gemm_c_transposed(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The same GEMM computing C^T = B^T A^T: the accumulator's runs lie along M."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for _k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(tl.trans(b), tl.trans(a), acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_n[:, None] * stride_cn + offs_m[None, :] * stride_cm, acc.to(c_ptr.dtype.element_ty))


@triton.jit
def atomic_add_loaded(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """An atomic and a load on one line: the fp16 atomic's compare-and-swap loop loads too."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)  # ATOMIC


@triton.jit
def strided_walk(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Loop-carried offsets multiplied by 3 each step: contiguous on the first step only, so Triton's AxisInfo
    (the join of the init and the yield) knows no contiguity and the loads are a dword each."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _i in range(n):
        acc += tl.load(x_ptr + offs)  # WALK
        offs = offs * 3
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)
