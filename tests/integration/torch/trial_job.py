#!/usr/bin/env python3
"""A small recommender trained on the CPU, for issue 29's tests: two tables (an EmbeddingBag of
users, an Embedding of items) and a linear top, trained with the optimizer named on the command
line on synthetic click data from a fixed seed. It knows nothing of edo: the tests run it under
`edo record` (with or without --apply-plan) and import it to train by hand.

    trial_job.py [--opt adagrad|adam|adamw|sgd] [--steps N] [--sparse] [--dense-read]
                 [--lr-schedule] [--losses FILE]

--dense-read: the item table's weight is also read whole by F.linear (an untied functional head,
what no module declares). --losses FILE: the job's own losses (JSON list), to compare with edo's.
"""

import argparse
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

USERS, ITEMS, DIM, BATCH, BAG = 2000, 5000, 16, 256, 3


class Recommender(nn.Module):
    def __init__(self, sparse=False, dense_read=False):
        super().__init__()
        self.user = nn.EmbeddingBag(USERS, DIM, mode="sum", sparse=sparse)
        self.item = nn.Embedding(ITEMS, DIM, sparse=sparse)
        self.top = nn.Linear(2 * DIM, 1)
        self.dense_read = dense_read

    def forward(self, users, offsets, items):
        u = self.user(users, offsets)
        i = self.item(items)
        out = self.top(torch.cat([u, i], 1)).squeeze(1)
        if self.dense_read:
            # Scores against every item: reads the whole table (as a tied LM head does).
            out = out + 1e-3 * F.linear(u, self.item.weight.float()).mean(1)
        return out


def batches(steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        users = torch.randint(0, USERS, (BATCH * BAG,), generator=g)
        offsets = torch.arange(0, BATCH * BAG, BAG)
        items = torch.randint(0, ITEMS, (BATCH,), generator=g)
        label = (((users.view(BATCH, BAG) % 7).sum(1) + items % 5) > 10).float()
        out.append((users, offsets, items, label))
    return out


def make_optimizer(name, params, lr_schedule=False):
    opt = {"adagrad": lambda: torch.optim.Adagrad(params, lr=0.05, eps=1e-10),
           "adam": lambda: torch.optim.Adam(params, lr=0.01),
           "adamw": lambda: torch.optim.AdamW(params, lr=0.01, weight_decay=0.01),
           "sgd": lambda: torch.optim.SGD(params, lr=0.05, momentum=0.9)}[name]()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5) if lr_schedule else None
    return opt, sched


def train(model, opt, steps, sched=None, seed=1):
    """The job's loop: returns the losses (floats)."""
    losses = []
    for users, offsets, items, label in batches(steps, seed):
        loss = F.binary_cross_entropy_with_logits(model(users, offsets, items), label)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(loss.detach())
    return [float(x) for x in losses]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", default="adagrad", choices=["adagrad", "adam", "adamw", "sgd"])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--sparse", action="store_true")
    ap.add_argument("--dense-read", action="store_true")
    ap.add_argument("--lr-schedule", action="store_true")
    ap.add_argument("--losses")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = Recommender(a.sparse, a.dense_read)
    opt, sched = make_optimizer(a.opt, list(model.parameters()), a.lr_schedule)
    losses = train(model, opt, a.steps, sched)
    if a.losses:
        with open(a.losses, "w") as f:
            json.dump({"losses": losses, "user_dtype": str(model.user.weight.dtype),
                       "item_dtype": str(model.item.weight.dtype)}, f)
    print("trial_job: %d steps, final loss %.6f" % (len(losses), losses[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
