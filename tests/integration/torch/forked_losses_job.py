#!/usr/bin/env python3
"""Two ranks started by torch.multiprocessing (start_method "fork"), 5 training steps each: a
forked rank leaves through os._exit (no atexit), so its last losses must be sent by
multiprocessing's exit finalizers (trial_e2e.py notes)."""

import torch
import torch.multiprocessing as mp
import torch.nn as nn


def rank(r):
    torch.manual_seed(r)
    e = nn.Embedding(50, 4)
    opt = torch.optim.SGD(e.parameters(), lr=0.1)
    for i in range(5):
        loss = e(torch.tensor([i, r])).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    mp.start_processes(rank, nprocs=2, start_method="fork")
