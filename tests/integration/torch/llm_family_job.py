#!/usr/bin/env python3
"""A small GPT-like job for issue 33's checks (llm_family_e2e.py): a token table of V rows, a
position table, one attention-free block, an LM head of V x D (tied to the token table, or its
own nn.Linear), and an EmbeddingBag of document tags, trained with AdamW on fixed shapes.

    llm_family_job.py --head tied|untied [--steps N] [--optimizer adamw|adam]

Shapes (the driver computes every byte from these): V=500, D=16, batch B=4, sequence T=12,
tags: 100 rows, B bags of 3 ids each (1-D ids with offsets). It knows nothing about edo.
"""

import argparse

import torch
import torch.nn as nn

V, D, B, T, TAGS = 500, 16, 4, 12, 100


class TinyGPT(nn.Module):
    def __init__(self, tied):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Embedding(T, D)
        self.tags = nn.EmbeddingBag(TAGS, D, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.norm = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, V, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, ids, tag_ids, tag_offsets):
        pos = torch.arange(ids.shape[1])
        h = self.wte(ids) + self.wpe(pos) + self.tags(tag_ids, tag_offsets)[:, None, :]
        h = h + self.mlp(self.norm(h))
        return self.lm_head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head", choices=["tied", "untied"], required=True)
    ap.add_argument("--steps", type=int, default=5)
    # AdamW (PyTorch's default weight_decay 0.01) or Adam without decay (training_levers_e2e.py).
    ap.add_argument("--optimizer", choices=["adamw", "adam"], default="adamw")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = TinyGPT(a.head == "tied")
    opt = (torch.optim.AdamW if a.optimizer == "adamw" else torch.optim.Adam)(model.parameters(), lr=1e-3)
    for _ in range(a.steps):
        loss = train_step(model, opt)
    print("final loss %.4f" % float(loss))


def train_step(model, opt):
    """One step on fixed shapes: B x T token ids, B bags of 3 tags."""
    ids = torch.randint(0, V, (B, T + 1))
    tag_ids = torch.randint(0, TAGS, (3 * B,))
    offsets = torch.arange(0, 3 * B, 3)
    logits = model(ids[:, :-1], tag_ids, offsets)
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


if __name__ == "__main__":
    main()
