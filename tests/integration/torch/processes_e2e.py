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
    dataset = [n for n in tables if n.startswith("Embedding#")]
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
    expect(problems, text.startswith("job: ") and "exit 3" in text.splitlines()[1], "header:\n" + text)
    expect(problems, "ranks:" in text and "  rank 0" in text and "  rank 1" in text, "no rank lines:\n" + text)
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["dataloader", "ranks"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--source")
    args = ap.parse_args()
    args.device, args.steps, args.json = "cpu", None, None
    try:
        ctx = Ctx(args)
        py, ver, _cuda = find_torch_python()
        ctx.python = (py, ver)
        {"dataloader": case_dataloader, "ranks": case_ranks}[args.case](ctx)
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
