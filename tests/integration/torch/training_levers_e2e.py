#!/usr/bin/env python3
"""Issue 33 points 3 and 4 at the user's level: llm_family_job.py (untied head) under `edo
record`, `edo tune` with a budget that only the lever fits, the plan exported, and
`edo.apply_plan` on the job's real model: the bytes PyTorch then holds after one training step
are the plan's, worked out here by hand.

    training_levers_e2e.py CASE --build BUILD_DIR [--source SOURCE_DIR]

CASE:
  sparse    Adam (no weight decay): the token table wte (V x D, 48 lookups a step) moves to a
            sparse gradient with SparseAdam: weights + Adam's two moments + 48 x (D x 4 + 8)
            gradient bytes (one value row and one int64 index per lookup); apply_plan without
            the job's optimizer leaves it as it was, with the reason
  refused   AdamW (PyTorch's default weight_decay 0.01): the sparse gradient is refused (SparseAdam
            has no weight decay) and the WHY says so
  frozen    Adam, `edo tune --fine-tune`: wte frozen (its weights only); `fine_tune` in the plan;
            without --fine-tune the same budget never freezes it
  tie       Adam: the "tie head to embedding" candidate (read from the run's tune_candidates)
            frees the head's weights, gradient and Adam state (4 x V x D x 4 bytes), needs
            retraining and is not chosen by the knapsack (what it frees is outside the tables);
            the plan with it written in is applied only with allow_tying=True, freeing exactly that
"""

import json
import os
import sqlite3
import sys
import tempfile

from edo_job_env import HERE, run, setup

JOB = os.path.join(HERE, "llm_family_job.py")
APPLY = os.path.join(HERE, "levers_apply.py")
V, D, B, T = 500, 16, 4, 12
W = V * D * 4            # wte's weights, fp32
LOOKUPS = B * T          # wte's lookups a step


def check(cond, what):
    if not cond:
        sys.stderr.write("FAILED: %s\n" % what)
        sys.exit(1)


def table(plan, name):
    return next(t for t in plan["tables"] if t["name"] == name)


def main():
    case = sys.argv[1]
    sys.argv = [sys.argv[0]] + sys.argv[2:]
    build, source, edo, py, env = setup()
    opt = "adamw" if case == "refused" else "adam"
    penv = dict(env, PYTHONPATH=os.path.join(build, "lib", "python"), EDO_TORCH="0")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "run.edodb")
        run([edo, "record", "-o", db, "--", py, JOB, "--head", "untied", "--steps", "4", "--optimizer", opt], env=env)
        tune = [edo, "tune", db, "--tables", "wte", "--strategies", "fp32,sparse_gradient", "--time-limit", "120", "--json"]
        full = json.loads(run(tune + ["--budget", "1GiB"], env=env).stdout)
        base = full["baseline"]["device_bytes"]
        check(table(full, "wte")["recorded_device_bytes"] == 4 * W, "wte recorded %r" % table(full, "wte"))
        sparse_bytes = 3 * W + LOOKUPS * (D * 4 + 8)
        if case == "tie":
            con = sqlite3.connect(db)
            rows = con.execute("SELECT params, device_bytes, needs_retraining FROM tune_candidates "
                               "WHERE optimizer = 'tie_head' AND table_name = 'wte'").fetchall()
            con.close()
            check(len(rows) == 1, "tie_head candidates %r" % rows)
            params, dev, retrain = json.loads(rows[0][0]), rows[0][1], rows[0][2]
            check(params["head"] == "lm_head" and params["saved_bytes"] == 4 * W and
                  (params["saved_weight_bytes"], params["saved_gradient_bytes"], params["saved_optimizer_bytes"]) == (W, W, 2 * W),
                  "tie candidate params %r" % params)
            check(dev == 4 * W and retrain == 1, "tie candidate: %d bytes (the table's own), needs_retraining %r" % (dev, retrain))
            check(table(full, "wte")["optimizer"] != "tie_head", "the knapsack chose tying: %r" % table(full, "wte"))
            path = os.path.join(tmp, "plan.json")
            run([edo, "export", db, "--format", "json", "-o", path], env=env)
            with open(path) as f:
                doc = json.load(f)
            t = table(doc, "wte")
            t["optimizer"], t["params"] = "tie_head", params
            with open(path, "w") as f:
                json.dump(doc, f)
            off = json.loads(run([py, APPLY, path, "--warm-step"], env=penv).stdout)
            check(not off["applied"] and not off["head_tied"] and "allow_tying=True" in off["why"], "without opt-in: %r" % off)
            on = json.loads(run([py, APPLY, path, "--warm-step", "--allow-tying"], env=penv).stdout)
            check(on["applied"] and on["head_tied"] and on["freed_bytes"] == params["saved_bytes"],
                  "tied: %r, the candidate frees %d" % (on, params["saved_bytes"]))
            check(on["weight_bytes"] + on["state_bytes"] + on["grad_bytes"] == dev, "the tied table's bytes %r != %d" % (on, dev))
            print("OK training levers (tie)")
            return
        if case in ("sparse", "refused"):
            budget = base - 4 * W + sparse_bytes + 64
            plan = json.loads(run(tune + ["--budget", str(budget)], env=env).stdout)
            t = table(plan, "wte")
            if case == "refused":
                check(t["optimizer"] != "sparse_adam", "a refused sparse gradient was chosen: %r" % t)
                check("SparseAdam has no weight decay" in t["why"], "the WHY does not say why: %r" % t["why"])
                print("OK training levers (refused)")
                return
            check((t["optimizer"], t["gradient"], t["strategy_label"]) == ("sparse_adam", "sparse", "fp32+sparse_adam(sparse)"),
                  "wte's choice %r" % {k: t[k] for k in ("strategy", "optimizer", "gradient", "strategy_label", "why")})
            check(t["device_bytes"] == sparse_bytes and t["params"]["sparse_gradient_bytes"] == LOOKUPS * (D * 4 + 8),
                  "wte sparse bytes %r, expected %d" % (t, sparse_bytes))
            check(not t["needs_retraining"], "a sparse gradient needs no retraining")
            path = os.path.join(tmp, "plan.json")
            run([edo, "export", db, "--format", "json", "-o", path], env=env)
            got = json.loads(run([py, APPLY, path, "--optimizer", "adam"], env=penv).stdout)
            check(got["applied"] and got["module_sparse"] and got["grad_is_sparse"], "apply_plan: %r" % got)
            check(got["grad_bytes"] == LOOKUPS * (D * 4 + 8), "PyTorch's sparse gradient %r" % got)
            check(got["weight_bytes"] + got["state_bytes"] + got["grad_bytes"] == t["device_bytes"],
                  "weights + SparseAdam state + gradient %r != the plan's %d" % (got, t["device_bytes"]))
            check(not got["in_job_optimizer"] and 0 < got["rows_moved"] <= LOOKUPS,
                  "only the rows read move, by SparseAdam: %r" % got)
            left = json.loads(run([py, APPLY, path, "--optimizer", "adam", "--no-optimizer"], env=penv).stdout)
            check(not left["applied"] and not left["module_sparse"] and "optimizer=opt" in left["why"], "%r" % left)
        else:
            budget = base - 4 * W + W + 64
            plan = json.loads(run(tune + ["--budget", str(budget), "--fine-tune"], env=env).stdout)
            t = table(plan, "wte")
            check(plan["fine_tune"] is True, "fine_tune not in the plan")
            check((t["optimizer"], t["gradient"], t["device_bytes"]) == ("frozen", "none", W), "wte's choice %r" % t)
            path = os.path.join(tmp, "plan.json")
            run([edo, "export", db, "--format", "json", "-o", path], env=env)
            with open(path) as f:
                check(json.load(f)["fine_tune"] is True, "the exported plan (read back from the database) lost fine_tune")
            got = json.loads(run([py, APPLY, path, "--optimizer", "adam"], env=penv).stdout)
            check(got["applied"] and not got["requires_grad"] and got["grad_bytes"] == 0 and got["state_bytes"] == 0,
                  "apply_plan frozen: %r" % got)
            check(got["weight_bytes"] == t["device_bytes"] and got["rows_moved"] == 0, "frozen bytes %r" % got)
            # Without --fine-tune (the first run): nothing is frozen, and the plan says so.
            check(full["fine_tune"] is False and table(full, "wte")["optimizer"] != "frozen",
                  "frozen without --fine-tune: %r" % table(full, "wte"))
    print("OK training levers (%s)" % case)


if __name__ == "__main__":
    main()
