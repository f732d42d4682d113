#!/usr/bin/env python3
"""trial_job.py's recommender under torch.compile (backend aot_eager: no C compiler needed):
by default a compiled step function that also calls loss.backward(); --fullgraph compiles the
model alone with fullgraph=True (a graph break would be an error). Prints the job's own losses
as JSON on the last line. Exits 77 on a torch without torch.compile.

    compiled_job.py [--fullgraph] [--steps N]
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trial_job  # noqa: E402

if not hasattr(torch, "compile"):
    print("skipped: torch %s has no torch.compile" % torch.__version__)
    sys.exit(77)
fullgraph = "--fullgraph" in sys.argv
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 6
torch.manual_seed(0)
model = trial_job.Recommender()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
compiled = torch.compile(model, backend="aot_eager", fullgraph=fullgraph)


def step_loss(users, offsets, items, label):
    loss = F.binary_cross_entropy_with_logits(compiled(users, offsets, items), label)
    loss.backward()
    return loss


if not fullgraph:
    step_loss = torch.compile(step_loss, backend="aot_eager")
losses = []
for users, offsets, items, label in trial_job.batches(steps):
    opt.zero_grad()
    losses.append(float(step_loss(users, offsets, items, label)))
    opt.step()
print(json.dumps(losses))
