#!/usr/bin/env python3
"""Applies a plan to llm_family_job.py's model (untied head) with edo.apply_plan and runs one
training step the job's way; prints, as JSON, what PyTorch then holds for the token table
(training_levers_e2e.py compares it with the plan's bytes).

    levers_apply.py PLAN --optimizer adam|adamw [--no-optimizer] [--warm-step] [--allow-tying]

--warm-step trains one step before the plan is applied (so that the head has a gradient and
optimizer state for tying to free).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import edo  # noqa: E402
import llm_family_job as job  # noqa: E402


def nbytes(t):
    if t is None:
        return 0
    if t.is_sparse:
        # What the sparse COO tensor holds: its values and its int64 indices (2-D: 1 x nnz).
        return t._values().numel() * t._values().element_size() + t._indices().numel() * t._indices().element_size()
    return t.numel() * t.element_size()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--optimizer", choices=["adam", "adamw"], default="adam")
    ap.add_argument("--no-optimizer", action="store_true", help="call apply_plan without optimizer=")
    ap.add_argument("--warm-step", action="store_true")
    ap.add_argument("--allow-tying", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = job.TinyGPT(False)
    opt = (torch.optim.AdamW if a.optimizer == "adamw" else torch.optim.Adam)(model.parameters(), lr=1e-3)
    if a.warm_step:
        job.train_step(model, opt)
    res = edo.apply_plan(model, a.plan, optimizer=None if a.no_optimizer else opt, allow_tying=a.allow_tying)
    w = model.wte.weight
    before = w.detach().clone()
    job.train_step(model, opt)
    grad = w.grad
    e = res["wte"]
    sparse = e.get("sparse_optimizer")
    state = 0
    for o in [opt] + ([sparse] if sparse is not None else []):
        for k, v in o.state.get(w, {}).items():
            if isinstance(v, torch.Tensor) and v.dim() > 0:
                state += nbytes(v)
    print(json.dumps(dict(
        applied=e["applied"], why=e["why"], optimizer=e["optimizer"], module_sparse=bool(model.wte.sparse),
        requires_grad=bool(w.requires_grad), grad_is_sparse=bool(grad is not None and grad.is_sparse),
        grad_bytes=nbytes(grad), weight_bytes=nbytes(w), state_bytes=state,
        rows_moved=int((w.detach() != before).any(dim=1).sum()),
        in_job_optimizer=any(p is w for g in opt.param_groups for p in g["params"]),
        head_tied=model.lm_head.weight is w, freed_bytes=e.get("freed_bytes", 0))))


if __name__ == "__main__":
    main()
