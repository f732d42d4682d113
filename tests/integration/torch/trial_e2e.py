#!/usr/bin/env python3
"""Issue 29 at the user's level: tests/integration/torch/trial_job.py under `edo record`, the
facts the PyTorch hooks send read back from the .edodb as the collector stores them: the losses
(session_losses), each table's optimizer (tables.optimizer_*) and dense use (tables.dense_use),
and the pytorch.plan_applied note (metadata session.<id>.pytorch.plan_applied).

    trial_e2e.py CASE --build BUILD_DIR [--source SOURCE_DIR]

CASE:
  notes      pytorch.loss (every step's loss, the job's own, steps numbered), pytorch.optimizer
             (Adagrad's hyperparameters, the learning rate a scheduler lowered), pytorch.dense_use
             (a table also read whole by F.linear; none for a table read by lookups only); the
             losses of ranks forked by torch.multiprocessing (they leave through os._exit)
  trial      `edo record --apply-plan plan.json` with Adagrad and with Adam: one line on stderr,
             pytorch.plan_applied, the tables recorded in fp16 with fp32 optimizer state and fp16
             gradients (exact bytes), the loss close to the baseline recording's
  bad-plan   --apply-plan with a plan that is not valid (strategy "int3"): one line, the job runs
             unchanged (the same losses as the baseline), no pytorch.plan_applied
  cli        --apply-plan with a missing file, or with EDO_TORCH=0 (the hooks that apply it off):
             exit 1, one line, the job never starts
  compile    compiled_job.py (torch.compile, aot_eager): every step's loss recorded from a compiled
             step function that calls backward(), the job's results unchanged by edo; --apply-plan
             applied before the first compiled forward; fullgraph=True not broken. Skipped (77)
             on a torch without torch.compile (Debian's 1.13)
"""

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from edo_job_env import HERE, run, setup

JOB = os.path.join(HERE, "trial_job.py")
USERS, ITEMS, DIM = 2000, 5000, 16


def plan_applied(db):
    """The pytorch.plan_applied note (kept as metadata: session.<id>.pytorch.plan_applied), or {}."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT value FROM metadata WHERE key LIKE 'session.%.pytorch.plan_applied'").fetchall()
    con.close()
    return json.loads(rows[-1][0]) if rows else {}


def losses_by_session(db):
    """{session id: [(step, loss)]} as the collector stored the pytorch.loss notes (session_losses)."""
    con = sqlite3.connect(db)
    out = {}
    for sid, step, loss, nonfinite in con.execute(
            "SELECT session_id, step, loss, nonfinite FROM session_losses ORDER BY session_id, position"):
        out.setdefault(sid, []).append((step, float(nonfinite) if nonfinite else loss))
    con.close()
    return out


def losses(db):
    """[(step, loss)] of the recording's one session that has losses."""
    by = losses_by_session(db)
    return next(iter(by.values())) if by else []


def optimizers(db):
    """{table: its recorded optimizer as the pytorch.optimizer note said it} (tables with one)."""
    con = sqlite3.connect(db)
    out = {}
    for row in con.execute("SELECT name, optimizer_kind, optimizer_lr, optimizer_eps, optimizer_weight_decay, optimizer_beta1,"
                           " optimizer_beta2, optimizer_momentum, optimizer_initial_accumulator_value, optimizer_maximize"
                           " FROM tables WHERE optimizer_kind IS NOT NULL"):
        out[row[0]] = dict(kind=row[1], lr=row[2], eps=row[3], weight_decay=row[4], betas=[row[5], row[6]], momentum=row[7],
                           initial_accumulator_value=row[8], maximize=bool(row[9]))
    con.close()
    return out


def dense_uses(db):
    """{table: what read it whole} for the tables the hooks saw read whole."""
    con = sqlite3.connect(db)
    out = dict(con.execute("SELECT name, dense_use FROM tables WHERE dense_use != ''").fetchall())
    con.close()
    return out


def tables(db):
    con = sqlite3.connect(db)
    out = {}
    for tid, name, dtype, wb in con.execute("SELECT id, name, dtype, weight_bytes FROM tables"):
        extra = dict(con.execute("SELECT kind, bytes FROM table_extra WHERE table_id = ?", (tid,)).fetchall())
        out[name] = dict(dtype=dtype, weight_bytes=wb, extra=extra)
    con.close()
    return out


class Checks(object):
    def __init__(self):
        self.problems = []

    def expect(self, ok, what):
        if not ok:
            self.problems.append(what)

    def done(self):
        for p in self.problems:
            sys.stderr.write("FAIL: %s\n" % p)
        return 1 if self.problems else 0


def record(edo, db, py, env, args, extra=()):
    cmd = [edo, "record", "-o", db] + list(extra) + ["--", py, JOB] + args
    return run(cmd, env)


def case_notes(edo, py, env, tmp):
    c = Checks()
    db, mine = os.path.join(tmp, "notes.edodb"), os.path.join(tmp, "losses.json")
    record(edo, db, py, env, ["--opt", "adagrad", "--steps", "45", "--dense-read", "--lr-schedule", "--losses", mine])
    job = json.load(open(mine))["losses"]
    # 45 steps: one note of steps 0..31, then the rest at exit; the recording holds them all.
    got = losses(db)
    c.expect([s for s, _ in got] == list(range(45)), "pytorch.loss steps %s, expected 0..44" % [s for s, _ in got])
    c.expect([v for _, v in got] == job[:45], "pytorch.loss values %s, the job's %s" % ([v for _, v in got][:3], job[:3]))
    opts = optimizers(db)
    c.expect(sorted(opts) == ["item", "user"], "optimizer recorded for %r" % sorted(opts))
    for name, opt in opts.items():
        # StepLR(step_size=10, gamma=0.5) from 0.05: the last step (the 45th) ran at 0.05 / 16.
        c.expect(opt["kind"] == "adagrad" and opt["eps"] == 1e-10 and opt["weight_decay"] == 0.0
                 and opt["initial_accumulator_value"] == 0.0 and opt["maximize"] is False and opt["betas"] == [0.0, 0.0],
                 "%s: optimizer %r" % (name, opt))
        c.expect(opt["lr"] == 0.05 / 16, "%s: optimizer lr %r, expected %r (the scheduler's)" % (name, opt["lr"], 0.05 / 16))
    dense = dense_uses(db)
    c.expect(list(dense) == ["item"] and "of %d rows" % ITEMS in dense["item"],
             "dense use %r (expected item: F.linear reads it whole)" % dense)
    # The same job without the dense read: no dense use, and Adam's hyperparameters.
    db2 = os.path.join(tmp, "plain.edodb")
    record(edo, db2, py, env, ["--opt", "adam", "--steps", "6"])
    c.expect(dense_uses(db2) == {}, "dense use %r for tables read by lookups only" % dense_uses(db2))
    for name, opt in optimizers(db2).items():
        c.expect(opt["kind"] == "adam" and opt["betas"] == [0.9, 0.999] and opt["lr"] == 0.01 and opt["eps"] == 1e-08,
                 "%s: optimizer %r" % (name, opt))
    c.expect([s for s, _ in losses(db2)] == list(range(6)), "6 steps: %r" % losses(db2))
    # Forked ranks (torch.multiprocessing, fork) leave through os._exit: their losses still arrive.
    db3 = os.path.join(tmp, "forked.edodb")
    run([edo, "record", "-o", db3, "--", py, os.path.join(HERE, "forked_losses_job.py")], dict(env, OMP_NUM_THREADS="1"))
    per_rank = list(losses_by_session(db3).values())
    c.expect(sorted([s for s, _ in v] for v in per_rank) == [list(range(5))] * 2,
             "forked ranks' losses: %r (expected steps 0..4 from each of 2 sessions)" % per_rank)
    return c.done()


def write_plan(path, strategy="fp16", extra_table=True):
    t = lambda name, rows: dict(name=name, strategy=strategy, params={}, device_bytes=rows * DIM * 2, host_bytes=0,
                               training=True, error=0.0005, needs_retraining=False, why="fp16 table", step_us=1.0,
                               gradient="dense", validated=True,
                               train_precision={"optimizer_state": "fp32", "rounding": "stochastic"},
                               strategy_label="fp16 (fp32 optimizer state)")
    tabs = [t("user", USERS), t("item", ITEMS)]
    if extra_table:
        tabs.append(dict(name="ranking", strategy="offload", params={"cache_rows": 10}, device_bytes=0, host_bytes=0))
    with open(path, "w") as f:
        json.dump({"schema": "edo.plan/1", "tables": tabs}, f)


def case_trial(edo, py, env, tmp):
    c = Checks()
    plan = os.path.join(tmp, "plan.json")
    write_plan(plan)
    for opt, state in (("adagrad", ["adagrad.sum"]), ("adam", ["adam.exp_avg", "adam.exp_avg_sq"])):
        base, trial = os.path.join(tmp, opt + "-base.edodb"), os.path.join(tmp, opt + "-trial.edodb")
        mine = os.path.join(tmp, opt + ".json")
        record(edo, base, py, env, ["--opt", opt])
        r = record(edo, trial, py, env, ["--opt", opt, "--losses", mine], ["--apply-plan", plan])
        lines = [x for x in r.stderr.splitlines() if x.startswith("edo: applied plan ")]
        c.expect(len(lines) == 1 and lines[0].startswith("edo: applied plan %s: 2 of 3 tables converted (ranking: "
                                                          % os.path.realpath(plan)),
                 "%s: stderr line %r" % (opt, lines))
        applied = plan_applied(trial)
        c.expect(applied.get("plan") == os.path.realpath(plan), "%s: plan_applied.plan %r" % (opt, applied.get("plan")))
        for name, rows in (("user", USERS), ("item", ITEMS)):
            e = applied.get("tables", {}).get(name, {})
            c.expect(e.get("applied") is True and e.get("strategy") == "fp16" and e.get("before_bytes") == rows * DIM * 4
                     and e.get("after_bytes") == rows * DIM * 2 and "stochastic" in e.get("why", ""),
                     "%s: plan_applied %s %r" % (opt, name, e))
        c.expect(applied.get("tables", {}).get("ranking", {}).get("applied") is False, "%s: ranking %r" % (opt, applied))
        # What the trial recording measured: fp16 weights, fp32 state, fp16 gradients, exactly.
        tabs = tables(trial)
        for name, rows in (("user", USERS), ("item", ITEMS)):
            t = tabs.get(name, {})
            want = dict({k: rows * DIM * 4 for k in state}, grad=rows * DIM * 2)
            c.expect(t.get("dtype") == "fp16" and t.get("weight_bytes") == rows * DIM * 2 and t.get("extra") == want,
                     "%s: recorded %s %r, expected fp16, %d bytes, %r" % (opt, name, t, rows * DIM * 2, want))
        c.expect(json.load(open(mine))["item_dtype"] == "torch.float16", "%s: the job's table is not fp16" % opt)
        # The loss: finite every step, the last 10 steps' mean within 0.01 of the baseline's.
        a = [v for _, v in losses(base)]
        b = [v for _, v in losses(trial)]
        c.expect(len(a) == len(b) == 50 and all(math.isfinite(v) for v in b), "%s: losses %r" % (opt, b))
        if len(a) == len(b) and b:
            c.expect(abs(sum(a[-10:]) - sum(b[-10:])) / 10 < 0.01, "%s: loss %r vs baseline %r" % (opt, b[-3:], a[-3:]))
    return c.done()


def case_bad_plan(edo, py, env, tmp):
    c = Checks()
    plan = os.path.join(tmp, "bad.json")
    write_plan(plan, strategy="int3", extra_table=False)
    base, trial = os.path.join(tmp, "base.edodb"), os.path.join(tmp, "trial.edodb")
    a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    record(edo, base, py, env, ["--steps", "8", "--losses", a])
    r = record(edo, trial, py, env, ["--steps", "8", "--losses", b], ["--apply-plan", plan])
    lines = [x for x in r.stderr.splitlines() if x.startswith("edo: cannot apply plan")]
    c.expect(len(lines) == 1 and 'table "user": strategy "int3" is not one of edo\'s' in lines[0]
             and lines[0].endswith("the job runs with its model unchanged"), "stderr: %r" % r.stderr[-2000:])
    c.expect(json.load(open(a)) == json.load(open(b)), "the job's losses changed: %s vs %s" % (open(a).read()[:200], open(b).read()[:200]))
    c.expect(plan_applied(trial) == {}, "pytorch.plan_applied sent for a plan not applied")
    c.expect(tables(trial).get("item", {}).get("dtype") == "fp32", "item recorded as %r" % tables(trial).get("item"))
    return c.done()


def case_cli(edo, py, env, tmp):
    c = Checks()
    db, marker = os.path.join(tmp, "x.edodb"), os.path.join(tmp, "ran")
    r = subprocess.run([edo, "record", "-o", db, "--apply-plan", os.path.join(tmp, "missing.json"), "--",
                        "touch", marker], capture_output=True, text=True, env=env, timeout=120)
    c.expect(r.returncode == 1, "exit %d, expected 1" % r.returncode)
    c.expect(r.stderr.strip().count("\n") == 0 and "--apply-plan" in r.stderr and "missing.json" in r.stderr
             and "No such file" in r.stderr, "stderr %r" % r.stderr)
    c.expect(not os.path.exists(marker) and not os.path.exists(db), "the job ran, or a database was written")
    plan = os.path.join(tmp, "plan.json")
    write_plan(plan)
    r = subprocess.run([edo, "record", "-o", db, "--apply-plan", plan, "--", "touch", marker], capture_output=True,
                       text=True, env=dict(env, EDO_TORCH="0"), timeout=120)
    c.expect(r.returncode == 1 and "EDO_TORCH=0" in r.stderr and not os.path.exists(marker),
             "EDO_TORCH=0 with --apply-plan: exit %d, %r" % (r.returncode, r.stderr))
    h = subprocess.run([edo, "record", "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    c.expect("--apply-plan" in h and "edo diff --plan" in h, "help does not teach --apply-plan")
    return c.done()


def case_compile(edo, py, env, tmp):
    c = Checks()
    job = os.path.join(HERE, "compiled_job.py")
    r = subprocess.run([py, job, "--steps", "2"], capture_output=True, text=True, env=dict(env, EDO_TORCH="0"), timeout=900)
    if r.returncode == 77:
        print(r.stdout.strip())
        return 77
    plain = json.loads(run([py, job], dict(env, EDO_TORCH="0")).stdout.splitlines()[-1])
    db = os.path.join(tmp, "compiled.edodb")
    mine = json.loads(run([edo, "record", "-o", db, "--", py, job], env).stdout.splitlines()[-1])
    c.expect(mine == plain, "edo changed the compiled job's losses: %s vs %s" % (mine, plain))
    got = losses(db)
    c.expect(got == list(enumerate(mine)), "pytorch.loss %r, the job's %r" % (got, mine))
    plan = os.path.join(tmp, "plan.json")
    write_plan(plan)
    trial = os.path.join(tmp, "trial.edodb")
    r = run([edo, "record", "-o", trial, "--apply-plan", plan, "--", py, job], env)
    # Applied at torch.compile(model): no global module hook left for the compiled module to warn about.
    c.expect("global hooks" not in r.stderr, "the job's stderr gained a warning:\n" + r.stderr[-1500:])
    applied = plan_applied(trial)
    c.expect(applied.get("tables", {}).get("item", {}).get("applied") is True, "plan_applied %r" % applied)
    c.expect(tables(trial).get("item", {}).get("dtype") == "fp16", "item recorded as %r" % tables(trial).get("item"))
    full = os.path.join(tmp, "fullgraph.edodb")
    mine = json.loads(run([edo, "record", "-o", full, "--", py, job, "--fullgraph"], env).stdout.splitlines()[-1])
    plain = json.loads(run([py, job, "--fullgraph"], dict(env, EDO_TORCH="0")).stdout.splitlines()[-1])
    c.expect(mine == plain, "edo changed the fullgraph job's losses")
    c.expect(losses(full) == list(enumerate(mine)), "fullgraph: backward runs eagerly, its losses are recorded: %r" % losses(full))
    return c.done()


CASES = {"compile": case_compile, "notes": case_notes, "trial": case_trial, "bad-plan": case_bad_plan, "cli": case_cli}


def main():
    case = sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
    if case not in CASES:
        sys.stderr.write("usage: trial_e2e.py %s --build DIR\n" % "|".join(CASES))
        return 2
    build, source, edo, py, env = setup()
    tmp = tempfile.mkdtemp(prefix="edo-trial-")
    try:
        rc = CASES[case](edo, py, env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
