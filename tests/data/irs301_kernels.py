"""Kernels that tests/test_rule_irs301_lds_round_trip.py compiles with Triton 3.9 for gfx942.

- fp8_bytes_gemm: B holds fp8 e4m3 values as bytes (`b.to(fp8, bitcast=True).to(f16)`), the
  pattern of fp8 weights stored as uint8; Triton stages the raw tile in LDS and converts it after
  the read (issue 21, defect 5).
- int8_attention: an attention loop with an int8 QK^T and an f16 PV, BLOCK_M=128 (sageattention's
  shape), compiled at num_warps=8 (the two dots get different MFMA layouts, P goes through LDS)
  and num_warps=4 (one layout, P converted in registers).
"""

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

GFX942 = GPUTarget("hip", "gfx942", 64)


@triton.jit
def fp8_bytes_gemm(A, B, C, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(B + (k + offs_k)[:, None] * BLOCK_N + offs_n[None, :])
        b = b.to(tl.float8e4b8, bitcast=True).to(tl.float16)
        acc = tl.dot(a, b, acc)
    tl.store(C + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc.to(tl.float16))


@triton.jit
def int8_attention(Q, K, V, Out, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(Q + offs_m[:, None] * HEAD + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD], tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + (start_n + offs_n)[None, :] * HEAD + offs_d[:, None])
        qk = tl.dot(q, k).to(tl.float32)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + (start_n + offs_n)[:, None] * HEAD + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    tl.store(Out + offs_m[:, None] * HEAD + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


@triton.jit
def fp8_kv_scaled(Q, K, S, Out, n, SCALE_AFTER: tl.constexpr):
    offs_m = tl.arange(0, 16)
    offs_d = tl.arange(0, 128)
    offs_t = tl.arange(0, 16)
    q = tl.load(Q + offs_m[:, None] * 128 + offs_d[None, :])
    scale = tl.load(S)
    acc = tl.zeros((16, 16), tl.float32)
    for j in range(n):
        k = tl.load(K + j * 2048 + offs_d[:, None] + offs_t[None, :] * 128)
        if SCALE_AFTER:
            acc += tl.dot(q, k.to(q.dtype)) * scale
        else:
            acc += tl.dot(q, (k.to(tl.float32) * scale).to(q.dtype))
    tl.store(Out + offs_m[:, None] * 16 + offs_t[None, :], acc)


def compile_all():
    gemm_sig = {"A": "*fp16", "B": "*u8", "C": "*fp16", "K": "i32",
                "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    triton.compile(ASTSource(fp8_bytes_gemm, gemm_sig, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}),
                   target=GFX942, options={"num_warps": 4, "num_stages": 2})
    attn_sig = {"Q": "*i8", "K": "*i8", "V": "*fp16", "Out": "*fp16", "N_CTX": "i32",
                "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "HEAD": "constexpr"}
    for num_warps in (8, 4):
        triton.compile(ASTSource(int8_attention, attn_sig, {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD": 64}),
                       target=GFX942, options={"num_warps": num_warps})
    kv_sig = {"Q": "*bf16", "K": "*fp8e4b8", "S": "*fp32", "Out": "*fp32", "n": "i32", "SCALE_AFTER": "constexpr"}
    for after in (0, 1):
        triton.compile(ASTSource(fp8_kv_scaled, kv_sig, {"SCALE_AFTER": after}), target=GFX942,
                       options={"num_warps": 4, "num_stages": 2})
