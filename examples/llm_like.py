#!/usr/bin/env python3
"""A small decoder-only language model: the second bundled workload for `edo record`.

Token embedding with padding_idx and an LM head tied to it (the same Parameter), a
position embedding with max_norm fed int32 position ids, 2-D (batch x sequence) inputs
with padded tails, a direct torch.nn.functional.embedding call on the token table
(sampled candidates), trained with AdamW. Token ids follow a bounded Zipf(alpha) law.

It knows nothing about edo. Run it under the profiler with
    edo record -o run.edodb -- python3 examples/llm_like.py
--ground-truth FILE writes what it fed each table, --outputs FILE its losses and a
checksum of the trained weights, --bench times the steps (ms_per_step on stdout).
"""

import argparse
import hashlib
import json
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0


def zipf_sampler(rows, alpha, gen, first=0):
    """Bounded Zipf(alpha) over rows first..rows-1 (seeded permutation of the ranks)."""
    n = rows - first
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    p = ranks.pow(-alpha)
    cdf = torch.cumsum(p / p.sum(), 0)
    cdf[-1] = 1.0
    perm = torch.randperm(n, generator=gen) + first

    def sample(shape):
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        return perm[torch.searchsorted(cdf, u).clamp_(max=n - 1)]
    return sample


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.position_embeddings = nn.Embedding(max_len, dim, max_norm=1.0)
        self.norm = nn.LayerNorm(dim)
        with torch.no_grad():   # GPT-style init: the tied head then starts near uniform
            nn.init.normal_(self.word_embeddings.weight, std=0.02)
            self.word_embeddings.weight[PAD].zero_()
            nn.init.normal_(self.position_embeddings.weight, std=0.02)

    def forward(self, ids, pos):
        return self.norm(self.word_embeddings(ids) + self.position_embeddings(pos))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        B, T, D = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=2)
        q = q.view(B, T, h, D // h).transpose(1, 2)
        k = k.view(B, T, h, D // h).transpose(1, 2)
        v = v.view(B, T, h, D // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (D // h) ** 0.5)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class LLMLike(nn.Module):
    def __init__(self, vocab, dim, max_len, layers=2, heads=4):
        super().__init__()
        self.embeddings = Embeddings(vocab, dim, max_len)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embeddings.word_embeddings.weight   # tied

    def forward(self, ids, pos):
        x = self.embeddings(ids, pos)
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.ln_f(x)), x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=4000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--candidates", type=int, default=64, help="sampled tokens per step")
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--ground-truth", metavar="FILE")
    ap.add_argument("--outputs", metavar="FILE")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--exit-code", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("llm_like: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 2

    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    model = LLMLike(args.vocab, args.dim, args.seq).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    tokens = zipf_sampler(args.vocab, 1.1, gen, first=1)

    batches = []
    for _ in range(args.steps + args.warmup):
        ids = tokens((args.batch, args.seq))
        lengths = torch.randint(args.seq // 2, args.seq + 1, (args.batch,), generator=gen)
        pad = torch.arange(args.seq)[None, :] >= lengths[:, None]
        ids = ids.masked_fill(pad, PAD)
        pos = torch.arange(args.seq, dtype=torch.int32)[None, :].expand(args.batch, -1)
        cand = tokens((args.candidates,))
        batches.append((ids, pos, cand))

    losses, times = [], []
    for i, (ids, pos, cand) in enumerate(batches):
        d_ids = ids.to(args.device)
        d_pos = pos.to(args.device)       # an expanded (non-contiguous) int32 tensor on CPU
        d_cand = cand.to(args.device)
        if args.bench and args.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits, hidden = model(d_ids[:, :-1], d_pos[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), d_ids[:, 1:].reshape(-1),
                               ignore_index=PAD)
        # sampled-candidate auxiliary term: a direct functional lookup of the token table
        cvec = F.embedding(d_cand, model.embeddings.word_embeddings.weight)
        loss = loss + 1e-3 * (hidden.mean(dim=(0, 1)) @ cvec.t()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.bench and args.device == "cuda":
            torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
        losses.append(loss.detach())
    losses = [float(x) for x in torch.stack(losses).cpu()]

    h = hashlib.sha256()
    for x in losses:
        h.update(torch.tensor(x, dtype=torch.float64).numpy().tobytes())
    for n, p in model.named_parameters():
        h.update(n.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    checksum = h.hexdigest()
    print("llm_like: %d steps, final loss %.6f, checksum %s" % (len(losses), losses[-1], checksum))
    if args.bench:
        times.sort()
        print("ms_per_step %.4f" % (times[len(times) // 2] * 1000.0))
        print("mean_ms_per_step %.4f" % (sum(times) / len(times) * 1000.0))
    if args.outputs:
        with open(args.outputs, "w") as f:
            json.dump({"losses": losses, "checksum": checksum}, f)
    if args.ground_truth:
        fed = {"embeddings.word_embeddings": (args.vocab, []),
               "embeddings.position_embeddings": (args.seq, [])}
        for ids, pos, cand in batches:
            fed["embeddings.word_embeddings"][1].extend([ids[:, :-1], cand])
            fed["embeddings.position_embeddings"][1].append(pos[:, :-1])
        tables = {}
        for name, (rows, xs) in fed.items():
            counts = torch.zeros(rows, dtype=torch.int64)
            for x in xs:
                counts += torch.bincount(x.reshape(-1).long(), minlength=rows)
            nz = torch.nonzero(counts).reshape(-1)
            tables[name] = {"rows": rows, "dim": args.dim, "dtype": "fp32",
                            "lookups": int(counts.sum()), "unique_rows": int(nz.numel()),
                            "counts": {str(int(i)): int(counts[i]) for i in nz}}
        # the tied LM head: registered under its own name on the token table's weights
        tables["lm_head"] = {"rows": args.vocab, "dim": args.dim, "dtype": "fp32",
                             "tied_to": "embeddings.word_embeddings"}
        gt = {"workload": "llm_like", "device": args.device, "steps": len(batches),
              "tables": tables, "ties": [["embeddings.word_embeddings", "lm_head"]],
              "exit_code": args.exit_code}
        with open(args.ground_truth, "w") as f:
            json.dump(gt, f)
    return args.exit_code


if __name__ == "__main__":
    sys.exit(main())
