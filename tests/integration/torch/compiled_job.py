#!/usr/bin/env python3
"""trial_job.py's recommender (an EmbeddingBag of users, an Embedding of items) trained compiled.
Prints the job's own losses as JSON on the last line. Exits 77 on a torch without torch.compile
(or without torch.export for --mode export).

    compiled_job.py [--mode MODE] [--fullgraph] [--instrument] [--steps N] [--truth FILE]

--mode (default "step"):
  step            a compiled step function that also calls loss.backward() (backend aot_eager:
                  no C compiler needed), around the compiled model
  fullgraph       the model alone with torch.compile(fullgraph=True, backend aot_eager)
                  (--fullgraph is the same)
  reduce-overhead the model alone with torch.compile(fullgraph=True, mode="reduce-overhead"):
                  inductor (needs a C compiler), CUDA graphs on a GPU
  export          torch.export.export(model) and the exported program's module trained
--instrument: edo.instrument(model) before compiling (when edo is importable).
--truth FILE: the ids fed to each table ({"tables": {name: {row: n}}, "steps": n}), as JSON.
Every batch reads BATCH * BAG user ids and BATCH item ids (trial_job.py); one optimizer step each.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trial_job  # noqa: E402

MODES = ("step", "fullgraph", "reduce-overhead", "export")


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    mode = "fullgraph" if "--fullgraph" in sys.argv else arg("--mode", "step")
    if mode not in MODES:
        sys.stderr.write("compiled_job: --mode must be one of %s\n" % ", ".join(MODES))
        return 2
    steps = int(arg("--steps", "6"))
    if not hasattr(torch, "compile") or (mode == "export" and not hasattr(torch, "export")):
        print("skipped: torch %s has no torch.compile / torch.export" % torch.__version__)
        return 77
    torch.manual_seed(0)
    model = trial_job.Recommender()
    if "--instrument" in sys.argv:
        try:
            import edo
        except ImportError:   # not under edo record
            edo = None
        if edo is not None:
            edo.instrument(model)
    batches = trial_job.batches(steps)
    if mode == "export":
        users, offsets, items, _label = batches[0]
        run = torch.export.export(model, (users, offsets, items)).module()
        params = list(run.parameters())
    else:
        if mode == "reduce-overhead":
            run = torch.compile(model, mode="reduce-overhead", fullgraph=True)
        else:
            run = torch.compile(model, backend="aot_eager", fullgraph=(mode == "fullgraph"))
        params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=0.01)

    def step_loss(users, offsets, items, label):
        loss = F.binary_cross_entropy_with_logits(run(users, offsets, items), label)
        loss.backward()
        return loss

    if mode == "step":
        step_loss = torch.compile(step_loss, backend="aot_eager")
    losses = []
    for users, offsets, items, label in batches:
        opt.zero_grad()
        losses.append(float(step_loss(users, offsets, items, label)))
        opt.step()
    truth = arg("--truth", None)
    if truth:   # what the job fed each table, for the tests to compare edo's counts with
        fed = {"user": {}, "item": {}}
        for users, _offsets, items, _label in batches:
            for name, ids in (("user", users), ("item", items)):
                for r in ids.tolist():
                    fed[name][str(r)] = fed[name].get(str(r), 0) + 1
        with open(truth, "w") as f:
            json.dump({"tables": fed, "steps": len(batches)}, f)
    print(json.dumps(losses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
