"""Compile a bench corpus: config variants of the fixture kernels, N kernels in one Triton cache.

    python bench/corpus.py --out ~/.cache/irscope-bench/corpus-1000 -n 1000 [--jobs 2]

Variants of the fixture kernels (fixtures/build.py: the same sources and specializations)
over block sizes, num_warps and num_stages, for gfx942 and sm_90, compiled with the Triton
of this Python into one cache directory, as many as -n asks (a variant the compiler
rejects, e.g. out of LDS, is skipped). Generated once and reused; never committed.
Deterministic: the variant list is fixed and sorted, so the same N gives the same kernels.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ("gfx942", "sm_90")


def _build_module():
    spec = importlib.util.spec_from_file_location("irscope_fixture_build", REPO / "fixtures" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants() -> list[tuple[str, str, dict, dict]]:
    """(fixture, target, constexpr overrides, options) in a fixed order, GEMMs first (they
    dominate real caches), then the rest, interleaved by target."""
    out = []
    for target in TARGETS:
        for fixture in ("gemm_aligned", "gemm_unaligned"):
            for bm, bn, bk, warps, stages in itertools.product((32, 64, 128, 256), (32, 64, 128, 256), (32, 64),
                                                               (2, 4, 8), (1, 2, 3)):
                out.append((fixture, target, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk},
                            {"num_warps": warps, "num_stages": stages}))
        for fixture, key in (("softmax", "BLOCK"), ("add", "BLOCK"), ("layernorm", "BLOCK")):
            for block, warps in itertools.product((256, 512, 1024, 2048, 4096), (1, 2, 4, 8, 16)):
                out.append((fixture, target, {key: block}, {"num_warps": warps}))
        for bm, bn, warps in itertools.product((64, 128), (32, 64), (4, 8)):
            out.append(("flash_attn", target, {"BLOCK_M": bm, "BLOCK_N": bn}, {"num_warps": warps, "num_stages": 2}))
    # interleave the two targets so any prefix holds both
    half = len(out) // 2
    return [v for pair in itertools.zip_longest(out[:half], out[half:]) for v in pair if v]


def _compile_one(args) -> str | None:
    fixture, target, const, opts = args
    build = _build_module()
    sys.path.insert(0, str(REPO / "fixtures" / "kernels"))
    import triton
    from triton.backends.compiler import GPUTarget

    fx = dict(build.FIXTURES[fixture])
    fx["const"] = {**fx.get("const", {}), **const}
    backend, arch, warp = build.TARGETS[target]
    options = {**fx.get("opts", {}), **fx.get(backend, {}), **opts}
    try:
        kernel = triton.compile(build._make_src(fx, backend), target=GPUTarget(backend, arch, warp), options=options)
    except Exception as exc:  # noqa: BLE001 - a variant the compiler rejects is skipped
        return f"skip {fixture} {target} {const} {opts}: {type(exc).__name__}"
    return kernel.metadata.hash


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="the cache directory to fill")
    ap.add_argument("-n", type=int, default=1000, help="kernels wanted")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    out = Path(args.out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ["TRITON_CACHE_DIR"] = str(out)
    os.environ.setdefault("TRITON_HOME", str(out.parent / "triton-home"))
    start, done, skipped = time.time(), 0, 0
    todo = variants()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for result in pool.map(_compile_one, todo[:args.n + args.n // 4], chunksize=4):
            if result is None or result.startswith("skip"):
                skipped += 1
            else:
                done += 1
            if done >= args.n:
                break
    kernels = sum(1 for p in out.iterdir() if p.is_dir() and any(p.glob("*.json")))
    summary = {"kernels": kernels, "skipped": skipped, "seconds": round(time.time() - start, 1),
               "triton": __import__("triton").__version__, "targets": list(TARGETS)}
    (out.parent / f"{out.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
