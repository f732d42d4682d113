#!/usr/bin/env python3
"""Jobs of several processes under `edo record`, read back as a user reads them.

    processes_e2e.py CASE --build BUILD_DIR [--source SOURCE_DIR]

CASE:
  dataloader  dataloader_job.py: DataLoader workers (fork) read a table the Dataset owns and
              inherit the model's table. One row per table, lookups summed over processes,
              each table's bytes counted once in the totals and the peak, the header shows the
              job (not a worker), a long name is printed whole.
  ranks       ranks_job.py: a launcher starts two gloo ranks (exec) with a DDP model, a side
              table that differs per rank and a DataLoader worker each. The header is the
              launcher with its exit code, the ranks are listed, per-rank tables are named by
              rank, each rank's memory is its own.
  weights     ordinary_job.py under `edo record --weights` (EDO_VERBOSE=1), with fork and with
              spawn workers: the model lives in main(), a table only the DataLoader workers
              read; every table has a weight snapshot, the summary says so, the verbose output
              says when each was taken.
  spawn       ordinary_job.py with spawn-context workers, the parent reading the Dataset's
              table too: one row for it (the workers' unpickled copies keep its name).
  diff-names  two versions of ordinary_job.py (the table in no model created on another line):
              `edo diff` matches every table (nothing "only in before / after").
  torchrun    the README's recipe: `edo record -- torchrun --standalone --nproc_per_node 2
              ranks_job.py --rank-of GT` (torchrun is `python -m torch.distributed.run`): the
              launcher is the job, both ranks are listed, the DDP table's lookups are the sum of
              what the ranks read. Skipped where this python's torchrun itself does not run
              (Debian's torch 1.13 under Python 3.11); `make torch-pypi` runs it on PyPI's torch.

Exits 77 (skipped) without a torch-capable python or a built edo.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from torch_e2e import SKIP, Ctx, Fail, Skip, clean_env, find_torch_python, run  # noqa: E402


def report(ctx, db):
    j = json.loads(run([ctx.edo, "report", "--json", db], os.environ.copy(), what="edo report --json").stdout)
    text = run([ctx.edo, "report", db], os.environ.copy(), what="edo report").stdout
    return j, text


def expect(problems, cond, msg):
    if not cond:
        problems.append(msg)


def no_process_suffixes(problems, tables):
    for name in tables:
        for bad in ("(session", "(pid"):
            expect(problems, bad not in name, "table %r is named by process" % name)


def case_dataloader(ctx):
    ctx.need_record()
    py, _ = ctx.python
    db, gt_file = ctx.path("dl.edodb"), ctx.path("dl.json")
    run([ctx.edo, "record", "-o", db, "--", py, os.path.join(HERE, "dataloader_job.py"),
         "--ground-truth", gt_file], clean_env(), what="edo record")
    fed = json.load(open(gt_file))["lookups"]
    rep, text = report(ctx, db)
    problems = []
    tables = {t["name"]: t for t in rep["tables"]}
    long_name = "encoder.relative_position_bucket_embeddings_of_the_first_layer"
    dataset = [n for n in tables if n == "Embedding[1000x16]"]
    expect(problems, set(tables) == {"user", long_name} | set(dataset) and len(dataset) == 1,
           "tables %s, expected user, %s and the Dataset's" % (sorted(tables), long_name))
    no_process_suffixes(problems, tables)
    for name, want in (("user", fed["user"]), (long_name, fed[long_name])):
        got = tables.get(name, {}).get("lookups")
        expect(problems, got == want, "%s: %r lookups, fed %d" % (name, got, want))
    if dataset:
        got = tables[dataset[0]]["lookups"]
        expect(problems, got == fed["dataset"], "Dataset table: %r lookups, fed %d" % (got, fed["dataset"]))
    one_copy = 500 * 8 * 4 + 64 * 4 * 4 + 1000 * 16 * 4
    expect(problems, rep["memory"]["weight_bytes"] == one_copy,
           "memory.weight_bytes %r, expected %d (each table once)" % (rep["memory"]["weight_bytes"], one_copy))
    expect(problems, rep["memory"]["peak_bytes"] == one_copy,
           "memory.peak_bytes %r, expected %d" % (rep["memory"]["peak_bytes"], one_copy))
    job = rep["job"]
    expect(problems, job["exit_code"] == 0 and job["forked_workers"] == 2,
           "job: exit %r, %r forked workers (expected 0, 2)" % (job["exit_code"], job["forked_workers"]))
    expect(problems, rep["session"]["pid"] == job["pid"], "\"session\" is pid %r, not the job's root %r"
           % (rep["session"]["pid"], job["pid"]))
    roles = sorted(s["role"] for s in rep["sessions"])
    expect(problems, roles == ["root", "worker", "worker"], "roles %s" % roles)
    first = text.splitlines()[0] if text else ""
    expect(problems, first.startswith("job: ") and "dataloader_job.py" in first, "header %r" % first)
    expect(problems, "exit 0" in text and "2 forked workers" in text, "header lacks exit 0 / workers:\n" + text)
    expect(problems, any(line.strip() == long_name for line in text.splitlines()),
           "the long name is not printed whole:\n" + text)
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def case_ranks(ctx):
    ctx.need_record()
    py, _ = ctx.python
    db, gt = ctx.path("ranks.edodb"), ctx.path("ranks.json")
    run([ctx.edo, "record", "-o", db, "--", py, os.path.join(HERE, "ranks_job.py"), "--ground-truth", gt,
         "--exit-code", "3"], clean_env(), expect=3, what="edo record")
    fed = [json.load(open("%s.rank%d" % (gt, r))) for r in (0, 1)]
    rep, text = report(ctx, db)
    problems = []
    tables = {t["name"]: t for t in rep["tables"]}
    no_process_suffixes(problems, tables)
    job = rep["job"]
    expect(problems, job["exit_code"] == 3 and "ranks_job.py" in job["command"],
           "job: %r exit %r (expected the launcher, exit 3)" % (job["command"], job["exit_code"]))
    expect(problems, [r["rank"] for r in job["ranks"]] == [0, 1], "job.ranks %s" % job["ranks"])
    sides = {n: t for n, t in tables.items() if n.endswith("(rank 0)") or n.endswith("(rank 1)")}
    expect(problems, len(sides) == 2, "per-rank tables %s (expected two named by rank)" % sorted(tables))
    for name, t in sides.items():
        r = 0 if name.endswith("(rank 0)") else 1
        expect(problems, t["rows"] == fed[r]["side_rows"] and t["lookups"] == fed[r]["lookups"]["side"]
               and t["ranks"] == [r], "%s: %r rows, %r lookups, ranks %r" % (name, t["rows"], t["lookups"], t["ranks"]))
    model = [t for t in rep["tables"] if t["rows"] == 200]
    want = sum(f["lookups"]["model"] for f in fed)
    expect(problems, len(model) == 1 and model[0]["lookups"] == want and model[0]["ranks"] == [0, 1],
           "the DDP table: %s, expected one row with %d lookups from ranks [0, 1]" % (model, want))
    dataset = [t for t in rep["tables"] if t["rows"] == 1000]
    want = sum(f["lookups"]["dataset"] for f in fed)
    expect(problems, len(dataset) == 1 and dataset[0]["lookups"] == want,
           "the Dataset table: %s, expected one row with %d lookups" % (dataset, want))
    # Ranks are processes of their own (exec): each holds its own copy of every table.
    weights = 2 * 1000 * 16 * 4 + 2 * 200 * 8 * 4 + 100 * 4 * 4 + 300 * 4 * 4
    expect(problems, rep["memory"]["weight_bytes"] == weights,
           "memory.weight_bytes %r, expected %d" % (rep["memory"]["weight_bytes"], weights))
    # The header paragraph (the job's command may wrap to the report's width) names the exit.
    header = text.split("\n\n")[0]
    expect(problems, text.startswith("job: ") and "exit 3" in header, "header:\n" + text)
    expect(problems, "ranks:" in text and "  rank 0" in text and "  rank 1" in text, "no rank lines:\n" + text)
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def case_torchrun(ctx):
    ctx.need_record()
    py, _ = ctx.python
    # torchrun without edo first: where it cannot start a rank at all, there is nothing to test.
    probe = run([py, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1", "--no_python", "true"],
                clean_env(), timeout=300, expect=None, what="torchrun probe")
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["exit %d" % probe.returncode])[-1]
        raise Skip("torchrun does not run on %s (%s); run with EDO_TEST_PYTHON=<a PyTorch 2.x python> "
                   "(make torch-pypi)" % (py, tail))
    db, gt = ctx.path("torchrun.edodb"), ctx.path("torchrun.json")
    run([ctx.edo, "record", "-o", db, "--", py, "-m", "torch.distributed.run", "--standalone",
         "--nproc_per_node", "2", os.path.join(HERE, "ranks_job.py"), "--rank-of", gt],
        clean_env(), what="edo record -- torchrun")
    fed = [json.load(open("%s.rank%d" % (gt, r))) for r in (0, 1)]
    rep, text = report(ctx, db)
    problems = []
    job = rep["job"]
    expect(problems, job["exit_code"] == 0 and "torch.distributed.run" in job["command"],
           "job: %r exit %r (expected torchrun, exit 0)" % (job["command"], job["exit_code"]))
    expect(problems, [r["rank"] for r in job["ranks"]] == [0, 1], "job.ranks %s" % job["ranks"])
    model = [t for t in rep["tables"] if t["rows"] == 200]
    want = sum(f["lookups"]["model"] for f in fed)
    expect(problems, len(model) == 1 and model[0]["lookups"] == want and model[0]["ranks"] == [0, 1],
           "the DDP table: %s, expected one row with %d lookups from ranks [0, 1]" % (model, want))
    ranks = {r["rank"]: r for r in rep.get("ranks", [])}
    for r in (0, 1):
        got = ranks.get(r, {}).get("lookups_by_table", {})
        expect(problems, sum(v for k, v in got.items() if k == model[0]["name"]) == fed[r]["lookups"]["model"]
               if model else False, "rank %d read %r of the DDP table, fed %d" % (r, got, fed[r]["lookups"]["model"]))
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def record_ordinary(ctx, label, job_args, flags=(), env=None, script=None):
    py, _ = ctx.python
    db, gt = ctx.path(label + ".edodb"), ctx.path(label + ".json")
    r = run([ctx.edo, "record"] + list(flags) + ["-o", db, "--", py, script or os.path.join(HERE, "ordinary_job.py"),
             "--ground-truth", gt] + list(job_args), clean_env(env), what="edo record")
    if "edo: internal error" in r.stderr or "Traceback" in r.stderr:
        raise Fail("the traced job reported an error:\n" + r.stderr[-4000:])
    return db, json.load(open(gt))["lookups"], r


def check_lookups(problems, rep, fed):
    tables = {t["name"]: t for t in rep["tables"]}
    expect(problems, set(tables) == set(fed), "tables %s, expected %s" % (sorted(tables), sorted(fed)))
    for name, want in fed.items():
        got = tables.get(name, {}).get("lookups")
        expect(problems, got == want, "%s: %r lookups, fed %d" % (name, got, want))
    return tables


def snapshots(db):
    import sqlite3
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return sorted(con.execute("SELECT t.name, w.hot_count, length(w.rows) / 8, w.table_rows FROM weight_snapshots w"
                                  " JOIN tables t ON t.id = w.table_id").fetchall())
    finally:
        con.close()


def case_weights(ctx):
    ctx.need_record()
    problems = []
    for context in ("fork", "spawn"):
        db, fed, r = record_ordinary(ctx, "weights-" + context, ["--context", context],
                                     ["--weights", "--weight-rows", "64"], {"EDO_VERBOSE": "1"})
        rep, _text = report(ctx, db)
        check_lookups(problems, rep, fed)
        snaps = snapshots(db)
        print("  %s workers: snapshots (table, hot rows, rows, table rows): %s" % (context, snaps))
        names = sorted(set(n for n, _h, _r, _t in snaps))
        expect(problems, names == sorted(fed), "%s: weight snapshots of %s, expected one of each of %s"
               % (context, names, sorted(fed)))
        for name, _hot, rows, table_rows in snaps:
            expect(problems, rows == min(64, table_rows), "%s: a snapshot of %d rows, expected %d"
                   % (name, rows, min(64, table_rows)))
        line = "weight snapshots: %d of %d table(s)" % (len(fed), len(fed))
        expect(problems, line in r.stderr, "%s: the summary lacks %r:\n%s" % (context, line, r.stderr[-3000:]))
        for name in ("user", "item", "Embedding[50x4]"):
            said = "edo: weight snapshot of %s taken (module released)" % name
            expect(problems, said in r.stderr, "%s: EDO_VERBOSE=1 did not say %r:\n%s" % (context, said, r.stderr[-3000:]))
        # The workers' table (the Dataset's, read in the 2 workers only): each worker takes its
        # own snapshot, at its exit where the worker holds the Dataset until then (torch 1.13),
        # or when its Dataset goes as the worker loop ends (torch 2.x drops the loop's last
        # reference, _worker_info, in a `finally`).
        said = [l for l in r.stderr.splitlines()
                if l in ("edo: weight snapshot of Embedding[1000x16] taken (at exit)",
                         "edo: weight snapshot of Embedding[1000x16] taken (module released)")]
        expect(problems, len(said) == 2, "%s: EDO_VERBOSE=1 said %d time(s) that a worker took a snapshot"
               " of Embedding[1000x16], expected 2 (one per worker):\n%s" % (context, len(said), r.stderr[-3000:]))
    # Without the flag: no snapshot, and the summary says nothing of them.
    db2, _fed, r2 = record_ordinary(ctx, "noweights", ["--context", "fork"])
    expect(problems, snapshots(db2) == [], "snapshots without --weights: %s" % snapshots(db2))
    expect(problems, "weight snapshots" not in r2.stderr, "summary speaks of snapshots without --weights")
    if problems:
        raise Fail("\n".join(problems))


def case_spawn(ctx):
    ctx.need_record()
    db, fed, _r = record_ordinary(ctx, "spawn", ["--context", "spawn", "--parent-reads"])
    rep, text = report(ctx, db)
    problems = []
    check_lookups(problems, rep, fed)
    no_process_suffixes(problems, {t["name"] for t in rep["tables"]})
    expect(problems, "<unpickled>" not in text, "a table named by unpickling:\n" + text)
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def case_diff_names(ctx):
    ctx.need_record()
    src = open(os.path.join(HERE, "ordinary_job.py")).read()
    marker = "    # @EDO-PADDING@"
    if marker not in src:
        raise Fail("ordinary_job.py lost its padding marker")
    v2 = ctx.path("ordinary_job_v2.py")
    with open(v2, "w") as f:
        f.write(src.replace(marker, "    # version 2: a few lines more\n    torch.manual_seed(0)\n\n" + marker))
    a, fed, _ = record_ordinary(ctx, "v1", [])
    b, _, _ = record_ordinary(ctx, "v2", [], script=v2)
    r = run([ctx.edo, "diff", a, b], os.environ.copy(), expect=None, what="edo diff")
    print(r.stdout)
    problems = []
    expect(problems, r.returncode in (0, 1), "edo diff exited %d:\n%s" % (r.returncode, r.stderr))
    expect(problems, "only in" not in r.stdout, "edo diff does not match the tables of two versions:\n" + r.stdout)
    for name in fed:
        expect(problems, name in r.stdout, "edo diff does not show %s" % name)
    if problems:
        raise Fail("\n".join(problems))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["dataloader", "ranks", "weights", "spawn", "diff-names", "torchrun"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--source")
    args = ap.parse_args()
    args.device, args.steps, args.json = "cpu", None, None
    try:
        ctx = Ctx(args)
        py, ver, _cuda = find_torch_python()
        ctx.python = (py, ver)
        {"dataloader": case_dataloader, "ranks": case_ranks, "weights": case_weights, "spawn": case_spawn,
         "diff-names": case_diff_names, "torchrun": case_torchrun}[args.case](ctx)
    except Skip as e:
        print("SKIP: %s" % e)
        return SKIP
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
