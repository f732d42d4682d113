#!/usr/bin/env python3
"""A data-parallel PyTorch job over 2 "nodes" x 2 gloo ranks on this machine, each node
recorded by its own `edo record` (EDO_HOSTNAME names the node), then `edo merge`d (issue 22):

  * every rank is in the merged report's "ranks" with its node, world size and pid, and its
    lookups per table equal what the rank itself read (its ground-truth file);
  * the job's table rows add every rank's lookups; the text report shows the imbalance;
  * each table read on all four ranks has its model-parallel LRU curve ("lru_union"), every
    reference sampled, equal to the exact LRU of the ranks' streams interleaved in lock-step;
  * merging in the other order gives the same report;
  * a recording of another job (another MASTER_PORT) is refused with a one-line error naming
    both files, and so is the same node twice.

    multinode_e2e.py --build BUILD_DIR [--source SOURCE_DIR]

Exits 77 (skipped) without a torch-capable python or a built edo.
"""

import argparse
import json
import os
from fractions import Fraction
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from torch_e2e import SKIP, Ctx, Fail, Skip, clean_env, find_torch_python, run  # noqa: E402

NODES = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_nodes(ctx, gt):
    """Both nodes' `edo record` at once (the ranks meet in one gloo rendezvous)."""
    py, _ = ctx.python
    port = free_port()
    procs, dbs = [], []
    for n in range(NODES):
        db = ctx.path("node%d.edodb" % n)
        dbs.append(db)
        env = clean_env({"EDO_HOSTNAME": "fake-node-%d" % n, "OMP_NUM_THREADS": "1"})
        cmd = [ctx.edo, "record", "-o", db, "--", py, os.path.join(HERE, "multinode_job.py"), "--node", str(n),
               "--nodes", str(NODES), "--port", str(port), "--run-id", "edo-test-%d" % port, "--ground-truth", gt]
        sys.stdout.write("$ %s &\n" % " ".join(cmd))
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline = time.time() + 540
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.time()))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise Fail("the nodes did not finish within 9 minutes")
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            raise Fail("a node's edo record exited %d:\n%s" % (p.returncode, out[-4000:]))
    return dbs


def lockstep_union(streams):
    """The ranks' streams interleaved by progress: reference i of a stream of n at i / n (exact
    fractions), ties to the lower rank."""
    refs = [(Fraction(i, len(s)), k, row) for k, s in enumerate(streams) for i, row in enumerate(s)]
    return [row for _, _, row in sorted(refs)]


def exact_lru(stream, cache_rows):
    """Hit rate of an LRU of cache_rows rows over the stream (a list simulation)."""
    cache, hits = [], 0
    for row in stream:
        if row in cache:
            hits += 1
            cache.remove(row)
        elif len(cache) == cache_rows:
            cache.pop(0)
        cache.append(row)
    return hits / float(len(stream))


def report(ctx, db):
    j = json.loads(run([ctx.edo, "report", "--json", db], os.environ.copy(), what="edo report --json").stdout)
    text = run([ctx.edo, "report", "--wide", db], os.environ.copy(), what="edo report").stdout
    return j, text


def main_case(ctx):
    ctx.need_record()
    gt = ctx.path("gt")
    dbs = record_nodes(ctx, gt)
    fed = {r: json.load(open("%s.rank%d" % (gt, r))) for r in range(NODES * 2)}
    job = ctx.path("job.edodb")
    run([ctx.edo, "merge", dbs[0], dbs[1], "-o", job], os.environ.copy(), what="edo merge")
    rep, text = report(ctx, job)
    problems = []

    def expect(cond, msg):
        if not cond:
            problems.append(msg)

    ranks = {r["rank"]: r for r in rep["ranks"]}
    expect(sorted(ranks) == [0, 1, 2, 3], "ranks %s" % sorted(ranks))
    names = {t["name"]: t for t in rep["tables"]}
    model = [t["name"] for t in rep["tables"] if t["rows"] == 500]
    side = [t["name"] for t in rep["tables"] if t["rows"] == 64]
    expect(len(model) == 1 and len(side) == 1, "tables %s" % sorted(names))
    for r, want in fed.items():
        got = ranks.get(r)
        if not got:
            continue
        expect(got["world_size"] == 4, "rank %d world_size %r" % (r, got["world_size"]))
        expect(got["node"] == "fake-node-%d" % (r // 2), "rank %d node %r" % (r, got["node"]))
        expect(got["group_rank"] == r // 2, "rank %d group_rank %r" % (r, got["group_rank"]))
        expect(got["steps"] >= 0 and got["pid"] > 0 and got["duration_s"] > 0, "rank %d: %r" % (r, got))
        if model and side:
            by = got["lookups_by_table"]
            expect(by.get(model[0]) == want["lookups"]["model"] and by.get(side[0]) == want["lookups"]["side"],
                   "rank %d read %r, the report says %r" % (r, want["lookups"], by))
    if model and side:
        for key, name in (("model", model[0]), ("side", side[0])):
            total = sum(f["lookups"][key] for f in fed.values())
            expect(names[name]["lookups"] == total and names[name]["ranks"] == [0, 1, 2, 3],
                   "%s: %r lookups from ranks %r, expected %d from all four" % (name, names[name]["lookups"],
                                                                                names[name]["ranks"], total))
        for key, name in (("model", model[0]), ("side", side[0])):
            u = names[name].get("lru_union")
            if not u or not u.get("available"):
                expect(False, "%s: no model-parallel LRU curve: %r" % (name, u))
                continue
            expect(u["ranks"] == 4 and u["rate"] == 1, "%s: lru_union %r" % (name, u))
            both = lockstep_union([fed[r]["streams"][key] for r in range(4)])
            for rows, rate in u["lru_hit_rate"]:
                want = exact_lru(both, rows)
                expect(abs(rate - want) < 1e-9, "%s: union LRU of %d rows %.6f, the lock-step union's %.6f" %
                       (name, rows, rate, want))
        busiest = fed[3]["lookups"]["side"]
        mean = sum(f["lookups"]["side"] for f in fed.values()) / 4.0
        expect("%s: busiest rank 3 with %d lookups, %.2fx the mean" % (side[0], busiest, busiest / mean) in text,
               "no imbalance line for %s:\n%s" % (side[0], text))
    # Each node's launcher is a root of the merged job; the ranks are ranks.
    roles = sorted(s["role"] for s in rep["sessions"])
    expect(roles == ["rank"] * 4 + ["root"] * 2, "roles %r" % roles)
    expect(rep["job"]["exit_code"] == 0, "job exit %r" % rep["job"]["exit_code"])
    sessions = [s for s in rep["sessions"] if s["rank"] is not None]
    expect(all(s["job_id"] == sessions[0]["job_id"] and s["master"].startswith("127.0.0.1:") for s in sessions),
           "identity: %r" % [(s["job_id"], s["master"]) for s in sessions])
    # The other order gives the same job.
    other = ctx.path("job-reversed.edodb")
    run([ctx.edo, "merge", dbs[1], dbs[0], "-o", other], os.environ.copy(), what="edo merge (reversed)")
    rep2, _ = report(ctx, other)
    expect(rep2["ranks"] == rep["ranks"] and rep2["tables"] == rep["tables"], "merging in the other order differs")
    # Another job (another rendezvous endpoint) is refused, naming both files; so is a node twice.
    py, _ = ctx.python
    stranger = ctx.path("other-job.edodb")
    run([ctx.edo, "record", "-o", stranger, "--", py, "-c", "import torch; torch.nn.Embedding(4, 2)(torch.tensor([1]))"],
        clean_env({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1", "WORLD_SIZE": "4", "RANK": "0"}), what="edo record")
    for inputs, needle in (([dbs[0], stranger], "different jobs"), ([dbs[0], dbs[0]], "both recorded rank 0")):
        r = run([ctx.edo, "merge"] + inputs + ["-o", ctx.path("refused.edodb")], os.environ.copy(), expect=1,
                what="edo merge (refused)")
        err = r.stderr.strip()
        expect(needle in err and inputs[0] in err and inputs[1] in err and "--force" in err and "\n" not in err,
               "refusal: %r" % err)
        expect(not os.path.exists(ctx.path("refused.edodb")), "a refused merge wrote its output")
    print(text)
    if problems:
        raise Fail("\n".join(problems))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source")
    args = ap.parse_args()
    args.device, args.steps, args.json = "cpu", None, None
    try:
        ctx = Ctx(args)
        py, ver, _cuda = find_torch_python()
        ctx.python = (py, ver)
        main_case(ctx)
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
