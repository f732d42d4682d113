#!/usr/bin/env python3
"""Applies a plan that trims the token table of examples/gpt_bpe.py's model (edo.apply_plan with
the `edo export --format vocab-remap` file), then checks what a trimmed model must do and prints,
as JSON, what PyTorch holds for the table after one training step (gpt_bpe_plan_e2e.py compares
it with the plan's bytes).

    trim_apply_check.py PLAN REMAP --config tied|untied|llama3 --rows V [--no-remap]

Checked here: on a batch of kept ids (old ids, fed as the data loader feeds them) the trimmed
model's logits are the original model's logits of the kept ids, in new-id order; a dropped id
reads the UNK row. --no-remap calls apply_plan without vocab_remap=, then with a remap that keeps
one id fewer than the plan (both must refuse).
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples"))

import torch  # noqa: E402

import edo  # noqa: E402
import gpt_bpe  # noqa: E402


def nbytes(t):
    return 0 if t is None else t.numel() * t.element_size()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("remap")
    ap.add_argument("--config", choices=["tied", "untied", "llama3"], required=True)
    ap.add_argument("--rows", type=int, required=True, help="the recorded table's rows (the tokenizer's vocabulary)")
    ap.add_argument("--no-remap", action="store_true")
    a = ap.parse_args()
    _, dim, heads, tied = gpt_bpe.CONFIGS[a.config]
    seq = 32
    torch.manual_seed(0)
    model = gpt_bpe.GPT(a.rows, dim, heads, seq, tied)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    with open(a.remap) as f:
        remap = json.load(f)
    kept = torch.tensor(remap["kept_old_ids"])
    gen = torch.Generator().manual_seed(1)
    ids = kept[torch.randint(0, len(kept), (4, seq), generator=gen)]
    with torch.no_grad():
        before = model(ids)
    res = edo.apply_plan(model, a.plan, optimizer=opt, allow_tying=True, vocab_remap=None if a.no_remap else a.remap)
    e = res["wte"]
    out = dict(applied=e["applied"], why=e["why"], optimizer=e["optimizer"], rows=int(model.wte.weight.shape[0]))
    if a.no_remap or not e["applied"]:
        # Another remap than the plan's (one id fewer): refused as well, nothing changed.
        other = dict(remap, kept_old_ids=remap["kept_old_ids"][:-1])
        o = edo.apply_plan(model, a.plan, optimizer=opt, allow_tying=True, vocab_remap=other)["wte"]
        out.update(other_applied=o["applied"], other_why=o["why"], other_rows=int(model.wte.weight.shape[0]))
        print(json.dumps(out))
        return
    with torch.no_grad():
        after = model(ids)
        dropped = next(i for i in range(a.rows) if remap["new_id_of_old"][i] == remap["unk"]["new_id"] and
                       i != remap["unk"]["old_id"])
        unk_row = model.wte(torch.tensor([dropped]))[0]
        out["dropped_reads_unk"] = bool(torch.equal(unk_row, model.wte.weight[remap["unk"]["new_id"]]))
    out["logits_shape"] = list(after.shape)
    out["logits_max_diff"] = float((after - before[..., kept]).abs().max())
    # One training step the job's way: targets through the head's remap.
    y = model.lm_head.edo_vocab_remap[ids]
    loss = torch.nn.functional.cross_entropy(model(ids).reshape(-1, after.shape[-1]), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    w = model.wte.weight
    state = sum(nbytes(v) for v in opt.state.get(w, {}).values() if isinstance(v, torch.Tensor) and v.dim() > 0)
    out.update(loss=float(loss), weight_bytes=nbytes(w), grad_bytes=nbytes(w.grad), state_bytes=state,
               remap_bytes=nbytes(model.wte.edo_vocab_remap), head_tied=model.lm_head.weight is w,
               head_rows=int(model.lm_head.weight.shape[0]), freed_bytes=e.get("freed_bytes", 0),
               after_bytes=e["after_bytes"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
