#!/usr/bin/env python3
"""TorchRec export from a recorded TorchRec job (issue 20, section 1):

  edo record -o run.edodb -- python3 torchrec_job.py --stand-in FAKES --infer
  edo tune run.edodb --budget B --strategies offload --max-error 0.1
  edo export run.edodb --format torchrec -o plan.py

The job is an EmbeddingBagCollection of the stand-in torchrec package (written from
pytorch/torchrec a48cef79's signatures; real torchrec needs torch 2.x) over Debian's real
nn.EmbeddingBag modules, served (no optimizer: an offload fits the budget). Checks: the PyTorch hook noted each table's config name and features in
the recording (metadata torchrec.table.<module path>); the plan is keyed by config name and
imports under the stand-ins (ParameterConstraints and CacheParams are dataclasses with the real
fields: a wrong keyword fails); every constraint has the config's feature_names, and
pooling_factors / num_poolings / batch_sizes as the job did them (lookups / bags, 1 pooling a
sample, the batch size); every table's CacheStatistics (cache_statistics; an LRU offload's
CacheParams.stats is the same) is a CacheStatistics whose miss rate falls from 1 at load factor 0
to 0 at 1. Exits 77 (skipped) without torch, the edo binary or
the tracer.

    torchrec_export_test.py --build BUILD_DIR [--source SOURCE_DIR]
"""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from edo_job_env import HERE, run, setup



def main():
    build, source, edo_bin, py, env = setup()
    fakes = os.path.join(source, "tests", "unit", "tuner", "fake_torchrec")
    tmp = tempfile.mkdtemp(prefix="edo-torchrec-")
    db, plan = os.path.join(tmp, "run.edodb"), os.path.join(tmp, "plan.py")
    out = run([edo_bin, "record", "-o", db, "--", py, os.path.join(HERE, "torchrec_job.py"), "--stand-in", fakes, "--infer"], env).stdout
    line = [x for x in out.splitlines() if x.startswith("torchrec_job: ")]
    if not line:
        sys.stderr.write("the job printed no ground truth:\n" + out)
        return 1
    truth = json.loads(line[0][len("torchrec_job: "):])
    failures = []

    # 1. The hook's notes in the recording.
    con = sqlite3.connect(db)
    notes = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM metadata WHERE key LIKE 'torchrec.table.%'")}
    con.close()
    for name, t in truth.items():
        key = "torchrec.table.sparse_arch.ebc.embedding_bags." + name
        n = notes.get(key)
        if n is None:
            failures.append("no note %s in the recording (have %s)" % (key, sorted(notes)))
            continue
        if n.get("config") != name or n.get("features") != t["features"] or n.get("bags") != t["bags"]:
            failures.append("note %s is %s; the job had config %s, features %s, %d bags" % (key, n, name, t["features"], t["bags"]))

    # 2. tune + export, imported as a user would (check_torchrec_plan.py, stand-ins on the path).
    report = json.loads(run([edo_bin, "report", db, "--json"], env).stdout)
    total = sum(t.get("total_bytes", t.get("weight_bytes", 0)) for t in report.get("tables", []))
    run([edo_bin, "tune", db, "--budget", str(total - 1), "--strategies", "offload",
         "--max-error", "0.1", "--time-limit", "120", "--reps", "2"], env)
    run([edo_bin, "export", db, "--format", "torchrec", "-o", plan], env)
    check = os.path.join(source, "tests", "unit", "tuner", "check_torchrec_plan.py")
    got = json.loads(run([py, check, plan, fakes], env).stdout)
    print(open(plan).read())
    if got["audit"]:
        failures.append("the plan file has code beyond its fixed text: %s" % got["audit"])
    cons = got["constraints"]
    for name, t in truth.items():
        path = "sparse_arch.ebc.embedding_bags." + name
        if got["module_paths"].get(name) != path:
            failures.append("module_paths[%s] is %r, not %r" % (name, got["module_paths"].get(name), path))
        c = cons.get(name)   # an edo_only table's constraint has its workload only
        if c is None:
            failures.append("no constraint keyed %r (keys: %s)" % (name, sorted(cons)))
            continue
        nf = len(t["features"])
        want_pf = t["lookups"] / t["bags"]
        if c["feature_names"] != t["features"]:
            failures.append("%s: feature_names %s, the config has %s" % (name, c["feature_names"], t["features"]))
        if len(c["pooling_factors"]) != nf or any(abs(p - want_pf) > 1e-6 * want_pf for p in c["pooling_factors"]):
            failures.append("%s: pooling_factors %s, the job read %.6f rows a bag" % (name, c["pooling_factors"], want_pf))
        if c["num_poolings"] != [1.0] * nf:
            failures.append("%s: num_poolings %s, want %s" % (name, c["num_poolings"], [1.0] * nf))
        if c["batch_sizes"] != [t["batch"]] * nf:
            failures.append("%s: batch_sizes %s, the job's batch is %d" % (name, c["batch_sizes"], t["batch"]))
        if c["algorithm"] == "LRU" and c.get("stats") != got["cache_statistics"].get(name):
            failures.append("%s: an LRU offload whose CacheParams.stats is %s" % (name, c.get("stats")))
    # TorchRec's CacheStatistics of every table, from the recorded LRU curve.
    for name, t in truth.items():
        st = got["cache_statistics"].get(name)
        if st is None:
            failures.append("%s: no cache_statistics" % name)
            continue
        mr = st["miss_rate"]
        if not st["is_cache_statistics"] or mr["0.0"] != 1.0 or mr["1.0"] != 0.0 or not (1 >= mr["0.01"] >= mr["0.1"] >= mr["0.5"] >= 0):
            failures.append("%s: miss rates %s are not TorchRec's miss-rate curve" % (name, mr))
        # Distinct rows a step: more than none, at most the lookups of a step and the rows the
        # job ever read (a step reads fewer).
        per_step = t["lookups"] / t["steps"]
        if not (0 < st["expected_lookups"] <= per_step) or not (0 < st["cacheability"] < 1):
            failures.append("%s: stats %s out of range (%.1f lookups a step)" % (name, st, per_step))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
