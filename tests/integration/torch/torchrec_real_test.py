#!/usr/bin/env python3
"""The TorchRec export against the real TorchRec (issue 20, section 1): a job built on PyPI's
torchrec (EmbeddingBagCollection, KeyedJaggedTensor) recorded by `edo record`, tuned, exported with
`--format torchrec`, and the plan handed to TorchRec's own EmbeddingShardingPlanner, for serving
(quantized model, quant sharders) and for training (EmbeddingBagCollectionSharder with the plan's
fused_params). Checks: the recording names each table by its TorchRec config; the plan file
imports under the real torchrec and fbgemm_gpu with nothing but its fixed text; every constraint
is found by the planner and honoured (the compute kernel, an offload's LRU cache and load
factor, the data type) on a 2-device topology of the budget's size; and a training plan made
for those 2 devices (`edo tune --devices 2`): TorchRec shards each table a way it allows.

Issue 34: TorchRec's estimators fed edo's statistics predict the cache misses edo measured: for
every offloaded table the planner chose, expected_miss_rate at its load factor is edo's
held-out miss rate within 0.02, and the rows its estimator prices a step (training: the
prefetch time turned back into rows) are that miss rate times the lookups a step; the statistics'
stable_fingerprint() (through CacheParams.stable_fingerprint, the planner's cache key) is stable
and changes with them; TorchRec's EmbeddingOffloadStats builds from the exported histogram.
Pooling factors per feature are the job's own (user_id exactly 1). `edo export --format
fbgemm-bench` loads with fbgemm_gpu's own TBEDataConfig, and its heavy hitters and Zipf (q, s)
are what FBGEMM's tbe_estimate_indices_distribution finds on the ids the job read.

Needs a Python with torch 2.x, torchrec and fbgemm-gpu-cpu: EDO_TORCHREC_PYTHON, or
BUILD/torchrec-venv (scripts/torchrec-venv.sh makes it; `make torchrec` makes it and runs this).
Exits 77 (skipped) without one.

    torchrec_real_test.py --build BUILD_DIR [--source SOURCE_DIR]
"""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile

from edo_job_env import HERE, lru_miss_rate, run, setup, skip

# The job's tables (torchrec_job.py), as the planner check rebuilds them.
TABLES = {
    "t_user": {"rows": 20000, "dim": 16, "features": ["user_id", "user_history"]},
    "t_item": {"rows": 5000, "dim": 16, "features": ["item_id"]},
    "t_geo": {"rows": 1000, "dim": 8, "features": ["t_geo"]},
}
WORLD = 2


def torchrec_python(build):
    cands = [os.environ.get("EDO_TORCHREC_PYTHON", ""), os.path.join(build, "torchrec-venv", "bin", "python")]
    for py in cands:
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import torchrec, fbgemm_gpu; from torchrec.distributed.planner import EmbeddingShardingPlanner"],
                capture_output=True).returncode == 0:
            return py
    skip("no Python with the real torchrec and fbgemm-gpu-cpu (EDO_TORCHREC_PYTHON, or %s: scripts/torchrec-venv.sh)"
         % cands[1])


def record_tune_export(edo_bin, py, env, tmp, mode, strategies, budget_of_total, max_error, devices=1, label=None):
    label = label or (mode if devices == 1 else "%s-%d-devices" % (mode, devices))
    db, plan = os.path.join(tmp, label + ".edodb"), os.path.join(tmp, label + "_plan.py")
    job = [py, os.path.join(HERE, "torchrec_job.py"), "--ids-out", os.path.join(tmp, label + "_ids.json")] + \
        (["--infer"] if mode == "infer" else [])
    out = run([edo_bin, "record", "-o", db, "--"] + job, env).stdout
    truth = json.loads([x for x in out.splitlines() if x.startswith("torchrec_job: ")][0][len("torchrec_job: "):])
    con = sqlite3.connect(db)
    notes = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM metadata WHERE key LIKE 'torchrec.table.%'")}
    con.close()
    report = json.loads(run([edo_bin, "report", db, "--json"], env).stdout)
    total = sum(t.get("total_bytes", t.get("weight_bytes", 0)) for t in report.get("tables", []))
    budget = budget_of_total(total)
    run([edo_bin, "tune", db, "--budget", str(budget), "--strategies", strategies, "--max-error", max_error,
         "--time-limit", "120", "--reps", "2", "--devices", str(devices)], env)
    run([edo_bin, "export", db, "--format", "torchrec", "-o", plan], env)
    run([edo_bin, "export", db, "--format", "json", "-o", plan + ".json"], env)
    RUNS[plan] = {"db": db, "truth": truth, "ids": os.path.join(tmp, label + "_ids.json")}
    return notes, plan, json.load(open(plan + ".json")), budget


RUNS = {}   # plan path -> {"db", "truth", "ids"} of its recording


def check(mode, notes, plan_path, plan_json, budget, py, source, env, tmp, failures):
    for name in TABLES:
        n = notes.get("torchrec.table.sparse_arch.ebc.embedding_bags." + name)
        if n is None or n.get("config") != name or n.get("features") != TABLES[name]["features"]:
            failures.append("%s: the recording's TorchRec note is %s" % (name, n))
    # The plan file under the real torchrec: nothing but its fixed text, every table keyed.
    got = json.loads(run([py, os.path.join(source, "tests", "unit", "tuner", "check_torchrec_plan.py"), plan_path, "/nonexistent"], env).stdout)
    if not got["real_torchrec"]:
        failures.append("%s: check_torchrec_plan.py did not import the real torchrec" % mode)
    if got["audit"]:
        failures.append("%s: the plan file has code beyond its fixed text: %s" % (mode, got["audit"]))
    # TorchRec's planner on the plan.
    tables_json = os.path.join(tmp, "tables.json")
    json.dump(TABLES, open(tables_json, "w"))
    r = subprocess.run([py, os.path.join(HERE, "check_torchrec_planner.py"), plan_path, tables_json, mode, str(WORLD),
                        str(budget)], capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        failures.append("%s: TorchRec's planner refused edo's plan (exit %d): %s" % (mode, r.returncode, r.stderr[-2000:]))
        return
    planned = json.loads(r.stdout.strip().splitlines()[-1])
    print("%s: TorchRec planned %s" % (mode, json.dumps(planned)))
    want_module = "torchrec.quant.embedding_modules" if mode == "infer" else "torchrec.modules.embedding_modules"
    if not planned["module_type"].startswith(want_module):
        failures.append("%s: the planner saw %s" % (mode, planned["module_type"]))
    by_name = {t["name"]: t for t in plan_json["tables"]}
    for name in TABLES:
        p = planned["tables"].get(name)
        c = got["constraints"].get(name)
        if p is None or c is None:
            failures.append("%s: %s: planned %s, constraint %s" % (mode, name, p, c))
            continue
        if name in got["edo_only"]:
            # A strategy TorchRec has no kernel for (e.g. edo's static hot set, neither LRU nor LFU):
            # the table keeps TorchRec's own choice, and only its workload is constrained.
            continue
        if p["compute_kernel"] not in c["compute_kernels"]:
            failures.append("%s: %s: TorchRec chose kernel %s, the plan allows %s" % (mode, name, p["compute_kernel"], c["compute_kernels"]))
        if c["algorithm"] is not None and (p["cache_algorithm"] != c["algorithm"] or p["load_factor"] != c["load_factor"]):
            failures.append("%s: %s: TorchRec's cache %s/%s, the plan's %s/%s" % (mode, name, p["cache_algorithm"], p["load_factor"], c["algorithm"], c["load_factor"]))
        if c.get("sharding_types") and p["sharding_type"] not in c["sharding_types"]:
            failures.append("%s: %s: TorchRec sharded it %s, the plan allows %s" % (mode, name, p["sharding_type"], c["sharding_types"]))
        if p["data_type"] != got["data_types"].get(name):
            failures.append("%s: %s: TorchRec's data type %s, the plan's %s" % (mode, name, p["data_type"], got["data_types"].get(name)))
        t = by_name.get("sparse_arch.ebc.embedding_bags." + name)
        if t is not None and t["strategy"] == "offload" and not p["compute_kernel"].endswith("uvm_caching"):
            failures.append("%s: %s: an offload planned as %s" % (mode, name, p["compute_kernel"]))
    if mode == "infer" and not any(t["strategy"] == "offload" for t in plan_json["tables"]):
        failures.append("infer: the plan has no offload (its budget should need one): %s" % [t["strategy"] for t in plan_json["tables"]])
    check_statistics(mode, planned, got, plan_json, RUNS[plan_path]["truth"], failures)


def check_statistics(mode, planned, got, plan_json, truth, failures):
    """Issue 34 point 1, against TorchRec's own estimator inputs (check_torchrec_planner.py)."""
    by_name = {t["name"].rsplit(".", 1)[-1]: t for t in plan_json["tables"]}
    for name, t in truth.items():
        c = got["constraints"].get(name, {})
        want = [n / b for n, b in zip(t["feature_lookups"], t["feature_bags"])]
        if c.get("pooling_factors") is None or any(abs(p - w) > 1e-9 * w for p, w in zip(c["pooling_factors"], want)):
            failures.append("%s: %s: pooling_factors %s, the job read %s ids a bag per feature" % (mode, name, c.get("pooling_factors"), want))
        st = got["cache_statistics"].get(name)
        if st is None or not st["fingerprint_stable"] or not st["fingerprint_changes"]:
            failures.append("%s: %s: stable_fingerprint() not stable or not changing with the statistics: %s" % (mode, name, st))
        p, q = by_name.get(name), planned["tables"].get(name, {})
        if p is None or p["strategy"] != "offload" or "expected_miss_rate" not in q:
            continue
        edo_miss = 1 - (p["heldout_hit_rate"] if p.get("heldout_hit_rate") is not None else p["hit_rate"])
        per_step = t["lookups"] / t["steps"]
        line = ("%s: %s: load factor %.6g: TorchRec's expected_miss_rate %.4f x expected_lookups %.1f = %.1f rows a step; "
                "edo's held-out miss rate %.4f x %.1f lookups a step = %.1f; EmbeddingOffloadStats (compulsory misses left out) %.4f"
                % (mode, name, q["load_factor"], q["expected_miss_rate"], q["expected_lookups"],
                   q["expected_miss_rate"] * q["expected_lookups"], edo_miss, per_step, edo_miss * per_step,
                   q["offload_stats_miss_rate"]))
        if "prefetch_rows" in q:
            line += "; TorchRec's prefetch estimate %.1f rows" % q["prefetch_rows"]
        print(line)
        if abs(q["expected_miss_rate"] - edo_miss) > 0.02 or abs(q["expected_lookups"] - per_step) > 1e-6 * per_step:
            failures.append("%s: %s: TorchRec reads miss rate %.4f x %.1f lookups, edo measured %.4f x %.1f"
                            % (mode, name, q["expected_miss_rate"], q["expected_lookups"], edo_miss, per_step))
        if "prefetch_rows" in q and abs(q["prefetch_rows"] - edo_miss * per_step) > 0.02 * per_step:
            failures.append("%s: %s: TorchRec's estimator prices %.1f rows fetched a step, edo measured %.1f"
                            % (mode, name, q["prefetch_rows"], edo_miss * per_step))
        if not q["fingerprint_stable"] or not q["offload_stats_fingerprint"]:
            failures.append("%s: %s: CacheParams.stable_fingerprint() not stable" % (mode, name))
        if not (0 <= q["offload_stats_miss_rate"] <= q["expected_miss_rate"] + 1e-9):
            failures.append("%s: %s: EmbeddingOffloadStats' reuse-only miss rate %.4f above the full one %.4f"
                            % (mode, name, q["offload_stats_miss_rate"], q["expected_miss_rate"]))


def check_estimator(py, env, tmp, plan, failures):
    """Every table cached by FBGEMM's LRU at a size edo measured held out (its LRU offload
    candidates in the tune run), planned by TorchRec for training with the plan's statistics:
    TorchRec's expected_miss_rate is edo's held-out miss rate within 0.02, and the rows its
    estimator prices a step (the prefetch time x hbm_to_ddr_mem_bw / row bytes) are that miss
    rate x the lookups a step."""
    r = RUNS[plan]
    con = sqlite3.connect(r["db"])
    measured = {}
    for table, params, held in con.execute("SELECT table_name, params, heldout_hit_rate FROM tune_candidates "
                                           "WHERE strategy = 'offload' AND heldout_hit_rate IS NOT NULL ORDER BY id"):
        prm = json.loads(params)
        name = table.rsplit(".", 1)[-1]
        if prm.get("policy") == "lru" and name in TABLES:
            measured.setdefault(name, (prm["cache_rows"] / TABLES[name]["rows"], 1 - held, "edo's held-out candidate"))
    con.close()
    # A table edo measured no LRU candidate for (its plan chose otherwise early): an exact LRU on
    # the ids the job read, warm on the first 70 %, scored on the rest, at load factor 0.05.
    ids = json.load(open(r["ids"]))
    for name in TABLES:
        if name not in measured:
            k = round(0.05 * TABLES[name]["rows"])
            measured[name] = (k / TABLES[name]["rows"], lru_miss_rate(ids[name], int(0.7 * len(ids[name])), k),
                              "an exact LRU on the job's ids, held out")
    lfs = os.path.join(tmp, "load_factors.json")
    json.dump({n: lf for n, (lf, _, _) in measured.items()}, open(lfs, "w"))
    tables_json = os.path.join(tmp, "tables.json")
    json.dump(TABLES, open(tables_json, "w"))
    res = subprocess.run([py, os.path.join(HERE, "check_torchrec_planner.py"), plan, tables_json, "cache", "1", str(1 << 30), lfs],
                         capture_output=True, text=True, env=env, timeout=900)
    if res.returncode != 0:
        failures.append("estimator: TorchRec's planner refused the cached tables (exit %d): %s" % (res.returncode, res.stderr[-2000:]))
        return
    planned = json.loads(res.stdout.strip().splitlines()[-1])
    if not planned.get("context_hash_stable"):
        failures.append("estimator: TorchRec's planner context hash (plan_loader's key) with edo's statistics: %s"
                        % planned.get("context_hash_error", "not stable"))
    truth = r["truth"]
    for name, (lf, edo_miss, source) in measured.items():
        q = planned["tables"].get(name, {})
        per_step = truth[name]["lookups"] / truth[name]["steps"]
        if "prefetch_rows" not in q:
            failures.append("estimator: %s: TorchRec priced no cache prefetch: %s" % (name, q))
            continue
        print("estimator: %s: load factor %.6g: TorchRec's expected_miss_rate %.4f (%s: %.4f), expected_lookups %.1f "
              "(edo: %.1f lookups a step); TorchRec's estimator prices %.1f rows fetched a step, edo measured %.1f; "
              "EmbeddingOffloadStats (compulsory misses left out) %.4f"
              % (name, lf, q["expected_miss_rate"], source, edo_miss, q["expected_lookups"], per_step, q["prefetch_rows"],
                 edo_miss * per_step, q["offload_stats_miss_rate"]))
        if abs(q["expected_miss_rate"] - edo_miss) > 0.02:
            failures.append("estimator: %s: TorchRec's miss rate %.4f, %s %.4f" % (name, q["expected_miss_rate"], source, edo_miss))
        if abs(q["prefetch_rows"] - edo_miss * per_step) > 0.02 * per_step:
            failures.append("estimator: %s: TorchRec prices %.1f rows a step, edo measured %.1f" % (name, q["prefetch_rows"], edo_miss * per_step))
        if not q["fingerprint_stable"] or not q["offload_stats_fingerprint"]:
            failures.append("estimator: %s: CacheParams.stable_fingerprint() not stable" % name)


def check_fbgemm_bench(edo_bin, py, env, tmp, plan, failures):
    """`edo export --format fbgemm-bench` loaded by fbgemm_gpu's TBEDataConfig, its index
    distribution against FBGEMM's own estimator on the ids the job read."""
    r = RUNS[plan]
    out = os.path.join(tmp, "bench.json")
    run([edo_bin, "export", r["db"], "--format", "fbgemm-bench", "-o", out], env)
    res = subprocess.run([py, os.path.join(HERE, "check_fbgemm_bench.py"), out, r["ids"]], capture_output=True, text=True,
                         env=env, timeout=900)
    if res.returncode != 0:
        failures.append("fbgemm-bench: fbgemm_gpu refused edo's file (exit %d): %s" % (res.returncode, res.stderr[-2000:]))
        return
    got = json.loads(res.stdout.strip().splitlines()[-1])
    for name, t in r["truth"].items():
        g = got.get("sparse_arch.ebc.embedding_bags." + name)
        if g is None:
            failures.append("fbgemm-bench: no %s in %s" % (name, sorted(got)))
            continue
        print("fbgemm-bench %s: edo q %.4g s %.3g, FBGEMM's estimator q %.4g s %.3g; heavy hitters %d / %d, max difference %.2g; "
              "T %d E %d D %d Bs %s Ls %s" % (name, g["edo"]["q"], g["edo"]["s"], g["fbgemm"]["q"], g["fbgemm"]["s"],
                                             len(g["edo"]["heavy_hitters"]), len(g["fbgemm"]["heavy_hitters"]),
                                             g["heavy_hitters_diff"], g["T"], g["E"], g["D"], g["Bs"], g["Ls"]))
        want_ls = [n / b for n, b in zip(t["feature_lookups"], t["feature_bags"])]
        if (g["T"], g["E"], g["D"]) != (len(t["features"]), TABLES[name]["rows"], TABLES[name]["dim"]) \
                or g["Bs"] != [t["batch"]] * len(t["features"]) or any(abs(a - b) > 1e-9 * b for a, b in zip(g["Ls"], want_ls)):
            failures.append("fbgemm-bench %s: T/E/D/Bs/Ls %s" % (name, g))
        if len(g["edo"]["heavy_hitters"]) != len(g["fbgemm"]["heavy_hitters"]) or g["heavy_hitters_diff"] > 1e-9:
            failures.append("fbgemm-bench %s: heavy hitters %s, FBGEMM's %s" % (name, g["edo"]["heavy_hitters"], g["fbgemm"]["heavy_hitters"]))
        if abs(g["edo"]["s"] - g["fbgemm"]["s"]) > 0.015 or abs(g["edo"]["q"] - g["fbgemm"]["q"]) > 0.05 * g["fbgemm"]["q"]:
            failures.append("fbgemm-bench %s: Zipf q %s s %s, FBGEMM's estimator q %s s %s"
                            % (name, g["edo"]["q"], g["edo"]["s"], g["fbgemm"]["q"], g["fbgemm"]["s"]))


def main():
    build, source, edo_bin, _, env = setup()
    py = torchrec_python(build)
    tmp = tempfile.mkdtemp(prefix="edo-torchrec-real-")
    failures = []
    # Serving: one byte under the recording forces an offload (the only strategy offered).
    notes, plan, plan_json, budget = record_tune_export(edo_bin, py, env, tmp, "infer", "offload", lambda total: total - 1, "0.1")
    check("infer", notes, plan, plan_json, budget, py, source, env, tmp, failures)
    check_fbgemm_bench(edo_bin, py, env, tmp, plan, failures)
    # Training (Adagrad): 55 % of weights + state + gradients needs row-wise Adagrad or fp16.
    notes, plan, plan_json, budget = record_tune_export(edo_bin, py, env, tmp, "train", "fp16,offload",
                                                        lambda total: int(total * 0.55), "0.02")
    check("train", notes, plan, plan_json, budget, py, source, env, tmp, failures)
    check_estimator(py, env, tmp, plan, failures)
    # Training planned over the topology's 2 devices (edo tune --devices 2, the budget per device):
    # TorchRec shards every table one of the ways edo's plan allows (sharding_types).
    notes, plan, plan_json, budget = record_tune_export(edo_bin, py, env, tmp, "train", "fp16,offload",
                                                        lambda total: int(total * 0.55) // WORLD, "0.02", devices=WORLD)
    if plan_json.get("devices") != WORLD or len(plan_json.get("per_device", [])) != WORLD:
        failures.append("train over %d devices: the plan has devices %s, per_device %s"
                        % (WORLD, plan_json.get("devices"), plan_json.get("per_device")))
    check("train", notes, plan, plan_json, budget, py, source, env, tmp, failures)
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("torchrec_real_test: TorchRec's planner found and honoured every constraint (serving, training, "
              "training over %d devices)" % WORLD)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
