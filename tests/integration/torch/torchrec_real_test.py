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

from edo_job_env import HERE, run, setup, skip

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


def record_tune_export(edo_bin, py, env, tmp, mode, strategies, budget_of_total, max_error, devices=1):
    label = mode if devices == 1 else "%s-%d-devices" % (mode, devices)
    db, plan = os.path.join(tmp, label + ".edodb"), os.path.join(tmp, label + "_plan.py")
    job = [py, os.path.join(HERE, "torchrec_job.py")] + (["--infer"] if mode == "infer" else [])
    run([edo_bin, "record", "-o", db, "--"] + job, env)
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
    return notes, plan, json.load(open(plan + ".json")), budget


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


def main():
    build, source, edo_bin, _, env = setup()
    py = torchrec_python(build)
    tmp = tempfile.mkdtemp(prefix="edo-torchrec-real-")
    failures = []
    # Serving: one byte under the recording forces an offload (the only strategy offered).
    notes, plan, plan_json, budget = record_tune_export(edo_bin, py, env, tmp, "infer", "offload", lambda total: total - 1, "0.1")
    check("infer", notes, plan, plan_json, budget, py, source, env, tmp, failures)
    # Training (Adagrad): 55 % of weights + state + gradients needs row-wise Adagrad or fp16.
    notes, plan, plan_json, budget = record_tune_export(edo_bin, py, env, tmp, "train", "fp16,offload",
                                                        lambda total: int(total * 0.55), "0.02")
    check("train", notes, plan, plan_json, budget, py, source, env, tmp, failures)
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
