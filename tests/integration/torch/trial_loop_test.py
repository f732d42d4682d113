#!/usr/bin/env python3
"""Issue 29's loop at the user's level, for a recommender trained with Adam and one trained with
Adagrad (tests/integration/torch/trial_job.py): record the job, tune it at three budgets, export
each plan, run the job again with `edo record --apply-plan PLAN` (no code change), and judge the
trial with `edo diff --plan PLAN TRIAL BASELINE`. Every plan must hold: no non-finite loss, the
applied tables' recorded bytes within 1 % of the plan, the final loss within 10 % of the
baseline's, and the verdict line printed.

The plans are what plain PyTorch can apply itself (`--strategies fp16,bf16`): both tables of the
job train, so the tuner offers them in fp16/bf16 trained with fp32 optimizer state and stochastic
rounding, which is what `edo.apply_plan` installs around the job's own optimizer. The budgets are
shares of the recorded device bytes: 95 % (one table changes), 80 % and 70 % (both change).

    trial_loop_test.py --build BUILD_DIR [--source SOURCE_DIR]
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from edo_job_env import HERE, run, setup

JOB = os.path.join(HERE, "trial_job.py")


def recorded_bytes(db):
    con = sqlite3.connect(db)
    total = con.execute("SELECT SUM(weight_bytes) FROM tables").fetchone()[0]
    total += con.execute("SELECT COALESCE(SUM(bytes), 0) FROM table_extra").fetchone()[0]
    con.close()
    return total


def main():
    build, source, edo, py, env = setup()
    tmp = tempfile.mkdtemp(prefix="edo-trial-loop-")
    problems = []
    try:
        for opt in ("adam", "adagrad"):
            base = os.path.join(tmp, opt + "-base.edodb")
            run([edo, "record", "--weights", "-o", base, "--", py, JOB, "--opt", opt], env)
            whole = recorded_bytes(base)
            for share in (95, 80, 70):
                where = "%s at %d%%" % (opt, share)
                tuned = os.path.join(tmp, "%s-%d.edodb" % (opt, share))
                shutil.copy(base, tuned)
                budget = whole * share // 100
                t = subprocess.run([edo, "tune", tuned, "--budget", str(budget), "--strategies", "fp16,bf16",
                                    "--time-limit", "120"], capture_output=True, text=True, env=env, timeout=600)
                if t.returncode != 0:
                    problems.append("%s: edo tune exit %d: %s" % (where, t.returncode, t.stderr.strip()[-400:]))
                    continue
                plan = os.path.join(tmp, "%s-%d.json" % (opt, share))
                run([edo, "export", tuned, "--format", "json", "-o", plan], env)
                changed = [x["name"] + " " + x["strategy_label"] for x in json.load(open(plan))["tables"]
                           if x["strategy_label"] not in ("fp32", "unchanged")]
                if not changed:
                    problems.append("%s: the plan changes nothing (budget %d of %d bytes)" % (where, budget, whole))
                trial = os.path.join(tmp, "%s-%d-trial.edodb" % (opt, share))
                run([edo, "record", "-o", trial, "--apply-plan", plan, "--", py, JOB, "--opt", opt], env)
                d = subprocess.run([edo, "diff", "--plan", plan, trial, base], capture_output=True, text=True, env=env,
                                   timeout=300)
                verdict = [x for x in d.stdout.splitlines() if x.startswith("verdict: ")]
                print("%s: %s changed; %s" % (where, ", ".join(changed), verdict[-1] if verdict else "no verdict"))
                if len(verdict) != 1:
                    problems.append("%s: %d verdict lines:\n%s" % (where, len(verdict), d.stdout[-2000:]))
                elif d.returncode != 0 or not verdict[0].startswith("verdict: the plan held"):
                    problems.append("%s: exit %d, %s\n%s" % (where, d.returncode, verdict[0], d.stdout[-2500:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for p in problems:
        sys.stderr.write("FAIL: %s\n" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
