#!/usr/bin/python3
"""PyTorch anchor for edo's strategy benchmark: torch.nn.functional.embedding_bag (mode=sum)
and index_select(out=) on the same shapes and index distributions as `edo bench`.

Run with Debian's system interpreter (it has python3-torch), e.g.
  /usr/bin/python3 bench/kernels/torch_embedding_bag.py --rows 10000000 --uniform --threads 2 --json
Prints one JSON object (schema edo.torch_anchor/1) with --json, else a line per figure.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def indices(rows, count, zipf, seed, perm):
    rng = np.random.default_rng(seed)
    if zipf is None or zipf <= 0:
        return torch.from_numpy(rng.integers(0, rows, size=count, dtype=np.int64))
    ranks = np.searchsorted(zipf_cdf(rows, zipf), rng.random(count), side="right")
    return torch.from_numpy(perm[np.minimum(ranks, rows - 1)])


_cdf = {}


def zipf_cdf(rows, a):
    key = (rows, a)
    if key not in _cdf:
        p = np.arange(1, rows + 1, dtype=np.float64) ** (-a)
        c = np.cumsum(p)
        _cdf[key] = c / c[-1]
    return _cdf[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=65536, help="indices per batch (bags = batch / pooling)")
    ap.add_argument("--pooling", type=int, default=32)
    ap.add_argument("--zipf", type=float, default=1.05)
    ap.add_argument("--uniform", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sets", type=int, default=8)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_embedding_bag.py: no CUDA device: torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    dtype = getattr(torch, a.dtype)
    zipf = None if a.uniform else a.zipf
    B = a.batch // a.pooling * a.pooling
    nb = B // a.pooling
    perm = np.random.default_rng(a.seed + 1).permutation(a.rows).astype(np.int64) if zipf else None
    g = torch.Generator().manual_seed(a.seed)
    weight = (torch.randn(a.rows, a.dim, generator=g) / a.dim ** 0.5).to(dtype).to(dev)
    sets = [indices(a.rows, B, zipf, a.seed + 100 + s, perm).to(dev) for s in range(a.sets)]
    offsets = torch.arange(0, B, a.pooling, dtype=torch.int64, device=dev)
    out_g = torch.empty(B, a.dim, dtype=dtype, device=dev)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    def run(op):
        rates = []
        for r in range(a.reps + 1):
            sync()
            t0 = time.perf_counter()
            for s in sets:
                op(s)
            sync()
            dt = time.perf_counter() - t0
            if r > 0:  # first pass is the warm-up
                rates.append(B * len(sets) / dt)
        return statistics.median(rates)

    with torch.no_grad():
        bag = run(lambda s: F.embedding_bag(s, weight, offsets, mode="sum"))
        gather = run(lambda s: torch.index_select(weight, 0, s, out=out_g))
        # Validate one bag against a plain sum.
        ref = weight[sets[0][: a.pooling]].float().sum(0)
        got = F.embedding_bag(sets[0], weight, offsets, mode="sum")[0].float()
        if not torch.allclose(ref, got, rtol=1e-2, atol=1e-2):
            print("torch_embedding_bag.py: validation failed", file=sys.stderr)
            return 1
    row_bytes = a.dim * weight.element_size()
    res = {
        "schema": "edo.torch_anchor/1",
        "torch": torch.__version__,
        "device": a.device,
        "dtype": a.dtype,
        "threads": torch.get_num_threads(),
        "rows": a.rows,
        "dim": a.dim,
        "batch": B,
        "pooling": a.pooling,
        "distribution": "uniform" if zipf is None else "zipf",
        "zipf": zipf,
        "embedding_bag_sum_rows_per_s": bag,
        "embedding_bag_sum_gbs": bag * row_bytes / 1e9,
        "index_select_rows_per_s": gather,
    }
    if a.json:
        print(json.dumps(res))
    else:
        print(f"torch {torch.__version__} {a.device} {a.dtype} {a.rows}x{a.dim} {res['distribution']}: "
              f"embedding_bag sum {bag / 1e6:.1f} Mrows/s ({res['embedding_bag_sum_gbs']:.1f} GB/s), "
              f"index_select {gather / 1e6:.1f} Mrows/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
