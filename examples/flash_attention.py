"""Flash-attention forward (one head per program row block), in the style of Triton's tutorial.

    irscope scan examples/flash_attention.py --target gfx942
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def attn_fwd(Q, K, V, Out, sm_scale, stride_qm, stride_kn, stride_vn, stride_om, N_CTX,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = head * N_CTX
    q = tl.load(Q + (base + offs_m)[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/ln(2): exp2 below
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + (base + start_n + offs_n)[None, :] * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + (base + start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + (base + offs_m)[:, None] * stride_om + offs_d[None, :], acc.to(tl.float16))


def attention(q, k, v, sm_scale):
    heads, n_ctx, head_dim = q.shape
    out = torch.empty_like(q)
    block_m, block_n = 128, 64
    grid = (triton.cdiv(n_ctx, block_m), heads)
    attn_fwd[grid](q, k, v, out, sm_scale, q.stride(1), k.stride(1), v.stride(1), out.stride(1), n_ctx,
                   BLOCK_M=block_m, BLOCK_N=block_n, HEAD_DIM=head_dim, num_warps=4, num_stages=2)
    return out


if __name__ == "__main__":
    torch.manual_seed(0)
    heads, n_ctx, head_dim = 16, 1024, 64
    q, k, v = (torch.randn((heads, n_ctx, head_dim), device=DEVICE, dtype=torch.float16) for _ in range(3))
    out = attention(q, k, v, 0.125)
    if os.environ.get("IRSCOPE_TARGET"):  # irscope scan --target: kernels compile, nothing runs
        print("no GPU: outputs not computed, check skipped")
    else:
        ref = torch.softmax((q.float() @ k.float().transpose(1, 2)) * 0.125, dim=-1) @ v.float()
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=0)
        print("attention matches torch")
