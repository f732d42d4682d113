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
fields: a wrong keyword fails); every constraint has the config's feature_names, and per
feature pooling_factors / num_poolings / batch_sizes as the job did them (that feature's ids /
its bags, exactly: user_id 1, user_history about 9; 1 pooling a sample; the batch size); every
table's CacheStatistics (cache_statistics; an LRU offload's CacheParams.stats is the same) is a
CacheStatistics whose miss rate falls from 1 at load factor 0 and is 0 at 1, whose
expected_lookups is the lookups a step, whose expected_miss_rate at an offload's exported load
factor is the held-out miss rate of edo's plan (within 0.02), and whose stable_fingerprint() is
the same for the same statistics and differs when they change; `edo export --format
fbgemm-bench` gives per table the rows, dim, per-feature pooling and batch sizes, and heavy
hitters equal to the shares of the hottest rows among the ids the job read. Exits 77 (skipped)
without torch, the edo binary or the tracer.

    torchrec_export_test.py --build BUILD_DIR [--source SOURCE_DIR]
"""

import collections
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from edo_job_env import HERE, lru_miss_rate, run, setup


def main():
    build, source, edo_bin, py, env = setup()
    fakes = os.path.join(source, "tests", "unit", "tuner", "fake_torchrec")
    tmp = tempfile.mkdtemp(prefix="edo-torchrec-")
    db, plan = os.path.join(tmp, "run.edodb"), os.path.join(tmp, "plan.py")
    ids_path = os.path.join(tmp, "ids.json")
    out = run([edo_bin, "record", "-o", db, "--", py, os.path.join(HERE, "torchrec_job.py"), "--stand-in", fakes, "--infer",
               "--ids-out", ids_path], env).stdout
    line = [x for x in out.splitlines() if x.startswith("torchrec_job: ")]
    if not line:
        sys.stderr.write("the job printed no ground truth:\n" + out)
        return 1
    truth = json.loads(line[0][len("torchrec_job: "):])
    failures = []
    rows_of = {"t_user": 20000, "t_item": 5000, "t_geo": 1000}   # torchrec_job.py's tables

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
        # Per feature, exactly the job's own lengths (user_id: 1 id a bag).
        want_pf = [n / b for n, b in zip(t["feature_lookups"], t["feature_bags"])]
        if c["feature_names"] != t["features"]:
            failures.append("%s: feature_names %s, the config has %s" % (name, c["feature_names"], t["features"]))
        if len(c["pooling_factors"]) != nf or any(abs(p - w) > 1e-9 * w for p, w in zip(c["pooling_factors"], want_pf)):
            failures.append("%s: pooling_factors %s, the job read %s ids a bag per feature" % (name, c["pooling_factors"], want_pf))
        if c["num_poolings"] != [1.0] * nf:
            failures.append("%s: num_poolings %s, want %s" % (name, c["num_poolings"], [1.0] * nf))
        if c["batch_sizes"] != [t["batch"]] * nf:
            failures.append("%s: batch_sizes %s, the job's batch is %d" % (name, c["batch_sizes"], t["batch"]))
        if c["algorithm"] == "LRU" and c.get("stats") != got["cache_statistics"].get(name):
            failures.append("%s: an LRU offload whose CacheParams.stats is %s" % (name, c.get("stats")))
    if cons.get("t_user", {}).get("pooling_factors", [None])[0] != 1.0:
        failures.append("t_user: user_id's pooling factor is %s, the job read exactly 1 id a bag" % cons.get("t_user"))
    # TorchRec's CacheStatistics of every table, from the recording.
    plan_json = json.loads(run([edo_bin, "export", db, "--format", "json"], env).stdout)
    by_name = {t["name"].rsplit(".", 1)[-1]: t for t in plan_json["tables"]}
    for name, t in truth.items():
        st = got["cache_statistics"].get(name)
        if st is None:
            failures.append("%s: no cache_statistics" % name)
            continue
        mr = st["miss_rate"]
        if not st["is_cache_statistics"] or mr["0.0"] != 1.0 or mr["1.0"] != 0.0 or not (1 >= mr["0.01"] >= mr["0.1"] >= mr["0.5"] >= 0):
            failures.append("%s: miss rates %s are not TorchRec's miss-rate curve" % (name, mr))
        # The lookups a step (TorchRec multiplies them by the miss rate: rows fetched a step);
        # the distinct rows a step are fewer.
        per_step = t["lookups"] / t["steps"]
        if abs(st["expected_lookups"] - per_step) > 1e-6 * per_step or not (0 < st["distinct_lookups"] <= per_step) \
                or not (0 < st["cacheability"] < 1):
            failures.append("%s: stats %s, want %.1f lookups a step" % (name, st, per_step))
        if not st["fingerprint_stable"] or not st["fingerprint_changes"]:
            failures.append("%s: stable_fingerprint() stable %s, changes with the curve %s" % (name, st["fingerprint_stable"], st["fingerprint_changes"]))
        # An LRU offload: TorchRec's miss rate at the exported load factor is edo's held-out one.
        p, c = by_name.get(name), cons.get(name, {})
        if p is not None and p["strategy"] == "offload" and c.get("load_factor"):
            edo_miss = 1 - (p["heldout_hit_rate"] if p.get("heldout_hit_rate") is not None else p["hit_rate"])
            tr = c["stats"]["at_load_factor"]
            print("%s: load factor %.6g: TorchRec's expected_miss_rate %.4f, edo's held-out miss rate %.4f" % (name, c["load_factor"], tr, edo_miss))
            if abs(tr - edo_miss) > 0.02:
                failures.append("%s: expected_miss_rate(%g) = %.4f, edo measured %.4f" % (name, c["load_factor"], tr, edo_miss))
    if not any(p["strategy"] == "offload" for p in plan_json["tables"]):
        failures.append("the plan has no offload (its budget should need one)")
    # Every LRU offload edo measured (each table, each cache size it fitted): the exported curve at
    # that load factor is edo's held-out miss rate, compulsory misses included, within 0.02.
    con = sqlite3.connect(db)
    measured = {}
    for table, params, held in con.execute("SELECT table_name, params, heldout_hit_rate FROM tune_candidates "
                                           "WHERE strategy = 'offload' AND heldout_hit_rate IS NOT NULL"):
        prm = json.loads(params)
        if prm.get("policy") == "lru":
            name = table.rsplit(".", 1)[-1]
            measured.setdefault(name, []).append((prm["cache_rows"] / rows_of[name], 1 - held))
    con.close()
    # And an exact LRU on the ids the job read, in its order: warm on the first 70 %, scored on
    # the rest (edo's held-out cut), every miss counted (first reads too).
    ids = json.load(open(ids_path))
    for name, rows in rows_of.items():
        stream = ids[name]
        cut = int(0.7 * len(stream))
        for lf in (0.002, 0.01, 0.05, 0.2, 0.5):
            k = max(1, round(lf * rows))
            measured.setdefault(name, []).append((k / rows, lru_miss_rate(stream, cut, k)))
    probes = {n: [lf for lf, _ in v] for n, v in measured.items()}
    got_probe = json.loads(run([py, check, plan, fakes, json.dumps(probes)], env).stdout)["cache_statistics"]
    for name, pts in measured.items():
        for (lf, edo_miss), (_, tr) in zip(pts, got_probe[name]["probe"]):
            print("%s: load factor %.6g: expected_miss_rate %.4f, held-out LRU miss rate %.4f" % (name, lf, tr, edo_miss))
            if abs(tr - edo_miss) > 0.02:
                failures.append("%s: expected_miss_rate(%g) = %.4f, edo measured %.4f held out" % (name, lf, tr, edo_miss))
    if not measured:
        failures.append("no LRU offload candidate with a held-out hit rate in the recording's tune run")

    # FBGEMM's benchmark configuration of each table.
    bench = json.loads(run([edo_bin, "export", db, "--format", "fbgemm-bench"], env).stdout)
    rows, dims = rows_of, {"t_user": 16, "t_item": 16, "t_geo": 8}
    for name, t in truth.items():
        b = bench["tables"].get("sparse_arch.ebc.embedding_bags." + name)
        if b is None:
            failures.append("fbgemm-bench: no table %s (have %s)" % (name, sorted(bench["tables"])))
            continue
        cfg = b["config"]
        want_ls = [n / k for n, k in zip(t["feature_lookups"], t["feature_bags"])]
        if (cfg["T"], cfg["E"], cfg["D"]) != (len(t["features"]), rows[name], dims[name]) \
                or cfg["batch_params"]["Bs"] != [t["batch"]] * len(t["features"]) \
                or any(abs(x - w) > 1e-9 * w for x, w in zip(cfg["pooling_params"]["Ls"], want_ls)):
            failures.append("fbgemm-bench %s: %s; want T %d E %d D %d Bs %s Ls %s" % (name, cfg, len(t["features"]), rows[name],
                                                                                     dims[name], [t["batch"]] * len(t["features"]), want_ls))
        counts = sorted(collections.Counter(ids[name]).values(), reverse=True)
        share = [x / sum(counts) for x in counts]
        hh = cfg["indices_params"]["heavy_hitters"]
        if not hh or any(abs(x - w) > 1e-9 for x, w in zip(hh, share)):
            failures.append("fbgemm-bench %s: heavy hitters %s, the job's hottest rows' shares %s" % (name, hh, share[:len(hh) or 5]))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
