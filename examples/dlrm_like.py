#!/usr/bin/env python3
"""A small DLRM-like recommendation model: the bundled workload for `edo record`.

Several EmbeddingBag tables (1-D indices + offsets, 2-D bags, per-sample weights,
int32 indices, padding_idx, include_last_offset), one Embedding with max_norm and sparse
gradients, a table created outside the model, and a direct
torch.nn.functional.embedding_bag call on a model table. Indices follow a bounded
Zipf(alpha) law over a seeded permutation of the rows. Trained with two optimizers (SGD for
the sparse table, Adam for the rest), so edo sees Adam moments appear.

It knows nothing about edo. Run it under the profiler with
    edo record -o run.edodb -- python3 examples/dlrm_like.py
--ground-truth FILE writes what it fed each table (lookups, unique rows, per-row counts),
--outputs FILE its losses and a checksum of the trained weights (to compare runs bit for
bit), --bench times the steps instead (ms_per_step on stdout). --infer serves instead of
training (forward passes only, no optimizer); --apply-plan PLAN converts the tables first
with edo.apply_plan (the package must be importable) and prints what it did as JSON.
"""

import argparse
import hashlib
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SCRIPT = os.path.basename(__file__)


def zipf_sampler(rows, alpha, gen):
    """Bounded Zipf(alpha) over ranks 1..rows, ranks mapped to rows by a seeded permutation."""
    ranks = torch.arange(1, rows + 1, dtype=torch.float64)
    p = ranks.pow(-alpha)
    cdf = torch.cumsum(p / p.sum(), 0)
    cdf[-1] = 1.0
    perm = torch.randperm(rows, generator=gen)

    def sample(shape, dtype=torch.int64):
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        r = torch.searchsorted(cdf, u).clamp_(max=rows - 1)
        return perm[r].to(dtype)
    return sample


# name (relative to the model), rows, kind and options. The names are what edo must report.
TABLES = [
    # 1-D indices + offsets, mode sum, int64
    ("sparse.user", 20000, dict(kind="bag1d", mode="sum", alpha=1.05)),
    # 2-D bags (batch x 8), mode mean
    ("sparse.item", 50000, dict(kind="bag2d", mode="mean", alpha=1.2, bag=8)),
    # per_sample_weights, int32 indices and offsets
    ("sparse.category", 1000, dict(kind="bag1d", mode="sum", alpha=0.9, psw=True, i32=True)),
    # padding_idx and include_last_offset, mode max
    ("sparse.geo", 5000, dict(kind="bag1d", mode="max", alpha=1.3, padding_idx=0, last=True)),
]


class DLRMLike(nn.Module):
    def __init__(self, dim, ad_rows, dense_features=13):
        super().__init__()
        self.sparse = nn.ModuleDict()
        for name, rows, o in TABLES:
            kw = {}
            if "padding_idx" in o:
                kw["padding_idx"] = o["padding_idx"]
            if o.get("last"):
                kw["include_last_offset"] = True
            self.sparse[name.split(".", 1)[1]] = nn.EmbeddingBag(rows, dim, mode=o["mode"], **kw)
        # a plain Embedding with max_norm and sparse gradients (trained by SGD)
        self.ad = nn.Embedding(ad_rows, dim, max_norm=1.0, sparse=True)
        self.bottom = nn.Sequential(nn.Linear(dense_features, 64), nn.ReLU(), nn.Linear(64, dim))
        n = len(TABLES) + 4  # bottom, tables, ad, history, side
        self.top = nn.Sequential(nn.Linear(n * dim, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense, feats, ad_ids, side_vec):
        parts = [self.bottom(dense)]
        for name, _, o in TABLES:
            key = name.split(".", 1)[1]
            f = feats[key]
            parts.append(self.sparse[key](f["input"], f.get("offsets"), f.get("psw")))
        parts.append(self.ad(ad_ids))
        # a direct functional lookup on a model table: the user's item history
        h = feats["history"]
        parts.append(F.embedding_bag(h["input"], self.sparse["item"].weight, h["offsets"],
                                     mode="sum"))
        parts.append(side_vec)
        return self.top(torch.cat(parts, dim=1)).squeeze(1)


def make_batches(args, gen, dim):
    samplers = {name: zipf_sampler(rows, o["alpha"], gen) for name, rows, o in TABLES}
    ad_sampler = zipf_sampler(args.ad_rows, 1.1, gen)
    side_sampler = zipf_sampler(args.side_rows, 0.8, gen)
    item_sampler = samplers["sparse.item"]
    batches = []
    B = args.batch
    for _ in range(args.steps + args.warmup):
        feats = {}
        fed = {}
        for name, rows, o in TABLES:
            key = name.split(".", 1)[1]
            dt = torch.int32 if o.get("i32") else torch.int64
            if o["kind"] == "bag2d":
                x = samplers[name]((B, o["bag"]), dt)
                feats[key] = {"input": x}
            else:
                lengths = torch.randint(1, 2 * args.pooling, (B,), generator=gen)
                n = int(lengths.sum())
                x = samplers[name]((n,), dt)
                if "padding_idx" in o:
                    # some padding entries, as a real pipeline pads short bags
                    pad = torch.rand((n,), generator=gen) < 0.1
                    x = torch.where(pad, torch.full_like(x, o["padding_idx"]), x)
                starts = torch.cumsum(lengths, 0) - lengths
                if o.get("last"):
                    offsets = torch.cat([starts, torch.tensor([n])])
                else:
                    offsets = starts
                f = {"input": x, "offsets": offsets.to(dt)}
                if o.get("psw"):
                    f["psw"] = torch.rand((n,), generator=gen)
                feats[key] = f
            fed[name] = [feats[key]["input"]]
        hl = torch.randint(1, 4, (B,), generator=gen)
        hn = int(hl.sum())
        hist = item_sampler((hn,))
        feats["history"] = {"input": hist, "offsets": torch.cumsum(hl, 0) - hl}
        fed["sparse.item"].append(hist)
        ad = ad_sampler((B,))
        fed["ad"] = [ad]
        side = side_sampler((B, 2))
        fed["side"] = [side]
        dense = torch.randn((B, 13), generator=gen)
        label = (torch.rand((B,), generator=gen) < 0.3).float()
        batches.append(dict(dense=dense, feats=feats, ad=ad, side=side, label=label, fed=fed))
    return batches


def to_device(b, device):
    if device == "cpu":
        return b
    mv = lambda t: t.to(device, non_blocking=True)  # noqa: E731
    feats = {k: {kk: mv(vv) for kk, vv in v.items()} for k, v in b["feats"].items()}
    return dict(b, dense=mv(b["dense"]), feats=feats, ad=mv(b["ad"]), side=mv(b["side"]),
                label=mv(b["label"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=0, help="untimed steps first (--bench)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--pooling", type=int, default=6, help="mean bag length of the 1-D bags")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--ad-rows", type=int, default=10000)
    ap.add_argument("--side-rows", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    ap.add_argument("--ground-truth", metavar="FILE")
    ap.add_argument("--outputs", metavar="FILE", help="losses and weight checksum (JSON)")
    ap.add_argument("--bench", action="store_true", help="print ms_per_step of the timed steps")
    ap.add_argument("--exit-code", type=int, default=0, help="exit with this code at the end")
    ap.add_argument("--infer", action="store_true", help="forward passes only (serving), no optimizer")
    ap.add_argument("--apply-plan", metavar="PLAN", help="edo.apply_plan(model, PLAN) before the first step")
    ap.add_argument("--ab", action="store_true",
                    help="benchmark only: under edo, timed steps run edo's hooks off, on, on, off, "
                         "off, on, on, off... (prints ab_off_ms_per_step / ab_on_ms_per_step and "
                         "the on/off ratio of every such quad of neighbouring steps)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("dlrm_like: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    dim = args.dim
    # A table that is not part of the model (named by its class and shape in edo's report).
    side = nn.Embedding(args.side_rows, dim)
    model = DLRMLike(dim, args.ad_rows)
    side = side.to(args.device)
    model = model.to(args.device)
    if args.apply_plan:
        import edo
        applied = edo.apply_plan(model, args.apply_plan, training=not args.infer)
        print("dlrm_like: applied %s" % json.dumps(applied, sort_keys=True))
        done = [r for r in applied.values() if r["applied"]]
        before = sum(r["before_bytes"] for r in done)
        after = sum(r["after_bytes"] for r in done)
        print("dlrm_like: apply_plan converted %d table(s): weights %d -> %d bytes, saved %d bytes"
              % (sum(1 for r in done if r["after_bytes"] != r["before_bytes"]), before, after,
                 before - after))
    if not args.infer:
        # A table whose planned bytes assume row-wise Adagrad (the plan's "optimizer") is
        # trained with edo.RowwiseAdagrad, as docs/tuning.md "Applying a plan" says; Adam's
        # moments would undo the saving, and torch's CPU Adam has no fp16 kernel.
        rowwise = set()
        if args.apply_plan:
            rowwise = {n for n, r in applied.items() if r["applied"] and r["optimizer"] == "rowwise_adagrad"}
        sgd = torch.optim.SGD([model.ad.weight], lr=0.05)
        named = [(n, p) for n, p in model.named_parameters() if n != "ad.weight"]
        adam_params = [p for n, p in named if n.rsplit(".", 1)[0] not in rowwise]
        row_params = [p for n, p in named if n.rsplit(".", 1)[0] in rowwise]
        adam = torch.optim.Adam(adam_params + list(side.parameters()), lr=1e-3)
        optimizers = [sgd, adam]
        if row_params:
            optimizers.append(edo.RowwiseAdagrad(row_params, lr=0.05))
    batches = make_batches(args, gen, dim)

    losses = []
    times = []
    cpu = []
    ab = {False: [], True: []}
    ab_cpu = {False: [], True: []}
    ab_seq = []  # (on, seconds) of the timed steps, in order
    edo = None
    if args.ab:
        import edo  # the package edo record puts on PYTHONPATH
    for i, b in enumerate(batches):
        # ABBA over the timed steps: a slow drift of the machine's speed cancels in each quad
        j = i - args.warmup
        on = (j % 4 in (1, 2)) if j >= 0 else bool(i % 2)
        if edo is not None:
            (edo.enable if on else edo.disable)()
        b = to_device(b, args.device)
        if args.bench and args.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        c0 = time.process_time()
        if args.infer:
            with torch.no_grad():
                out = model(b["dense"], b["feats"], b["ad"], side(b["side"]).sum(1))
                loss = F.binary_cross_entropy_with_logits(out, b["label"])
        else:
            side_vec = side(b["side"]).sum(1)
            out = model(b["dense"], b["feats"], b["ad"], side_vec)
            loss = F.binary_cross_entropy_with_logits(out, b["label"])
            for opt in optimizers:
                opt.zero_grad()
            loss.backward()
            for opt in optimizers:
                opt.step()
        if args.bench and args.device == "cuda":
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        c1 = time.process_time()
        if i >= args.warmup:
            times.append(t1 - t0)
            cpu.append(c1 - c0)
            ab[on].append(t1 - t0)
            ab_cpu[on].append(c1 - c0)
            ab_seq.append((on, t1 - t0))
        losses.append(loss.detach())
    losses = [float(x) for x in torch.stack(losses).cpu()]

    h = hashlib.sha256()
    for x in losses:
        h.update(torch.tensor(x, dtype=torch.float64).numpy().tobytes())
    for n, p in list(model.named_parameters()) + [("side.weight", side.weight)]:
        h.update(n.encode())
        h.update(p.detach().cpu().float().contiguous().numpy().tobytes())
    checksum = h.hexdigest()
    print("dlrm_like: %d steps, final loss %.6f, checksum %s" % (len(losses), losses[-1], checksum))
    if args.bench:
        times.sort()
        med = times[len(times) // 2] * 1000.0
        mean = sum(times) / len(times) * 1000.0
        print("ms_per_step %.4f" % med)
        print("mean_ms_per_step %.4f" % mean)
        print("min_ms_per_step %.4f" % (times[0] * 1000.0))
        # CPU time of the whole process (all threads: torch's and the tracer's) per step
        print("cpu_ms_per_step %.4f" % (sum(cpu) / len(cpu) * 1000.0))
        if edo is not None:
            for on in (False, True):
                v = sorted(ab[on])
                print("ab_%s_ms_per_step %.4f" % ("on" if on else "off", v[len(v) // 2] * 1000.0))
                v = sorted(ab_cpu[on])
                print("ab_%s_cpu_ms_per_step %.4f" % ("on" if on else "off",
                                                      v[len(v) // 2] * 1000.0))
            quads = []
            for q in range(0, len(ab_seq) - 3, 4):
                four = ab_seq[q:q + 4]
                on_s = sum(t for o, t in four if o)
                off_s = sum(t for o, t in four if not o)
                if off_s > 0:
                    quads.append(on_s / off_s)
            print("ab_quad_ratios %s" % " ".join("%.5f" % r for r in quads))
    if args.outputs:
        with open(args.outputs, "w") as f:
            json.dump({"losses": losses, "checksum": checksum}, f)
    if args.ground_truth:
        write_ground_truth(args, batches)
    return args.exit_code


def write_ground_truth(args, batches):
    rows = {name: r for name, r, _ in TABLES}
    rows["ad"] = args.ad_rows
    side_name = "Embedding[%dx%d]" % (args.side_rows, args.dim)
    rows["side"] = args.side_rows
    tables = {}
    for name, r in rows.items():
        counts = torch.zeros(r, dtype=torch.int64)
        for b in batches:
            for x in b["fed"][name]:
                counts += torch.bincount(x.reshape(-1).long(), minlength=r)
        nz = torch.nonzero(counts).reshape(-1)
        out_name = side_name if name == "side" else name
        tables[out_name] = {
            "rows": r, "dim": args.dim, "dtype": "fp32",
            "lookups": int(counts.sum()), "unique_rows": int(nz.numel()),
            "counts": {str(int(i)): int(counts[i]) for i in nz},
        }
    gt = {"workload": "dlrm_like", "device": args.device, "steps": len(batches),
          "tables": tables, "ties": [], "exit_code": args.exit_code}
    with open(args.ground_truth, "w") as f:
        json.dump(gt, f)


if __name__ == "__main__":
    sys.exit(main())
