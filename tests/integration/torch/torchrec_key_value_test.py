#!/usr/bin/env python3
"""The SSD tier's TorchRec export against the real TorchRec (issue 35 point 3): a plan with two
training tables and one inference table on the ssd tier (`edo tune`'s "ssd" choice: the table on SSD behind a device cache and a
host cache sized by replaying the recorded stream) and one kept in fp32, exported by
`edo export PLAN.json --format torchrec`, and the file handed to TorchRec 1.9.2's own code by
check_torchrec_key_value.py. Checks, with answers worked out by hand below:

  * on a "cuda" topology with SSD capacity the enumerator offers only key_value for the ssd
    tables, with the exported KeyValueParams, and its estimator charges the device exactly
    max_l1_cache_size MB for the L1, no host memory (TorchRec does not count the L2) and the
    whole table on SSD; the planner chooses key_value with those parameters;
  * the SSD TBEs a sharded model would build from that plan (TorchRec's group_tables and
    _populate_ssd_tbe_params): one TBE a table, with the cache sets and L2 GB of the export's
    key_value_tables, the L1 holding at least the replay's device rows;
  * the inference table is not in the constraints (TorchRec's quant sharders offer no
    key_value: BaseQuantEmbeddingSharder.compute_kernels, embedding_types.py line 675-686), and
    the sizes key_value_tables gives it for the unquantized sharder plan and build as above;
  * the JSON plan (`edo export PLAN.json --format json`) carries the same sizes per table
    (key_value_params);
  * a "cpu" topology is refused: TorchRec's training sharder offers key_value for "cuda" only
    (BaseEmbeddingSharder.compute_kernels, torchrec/distributed/embedding_types.py line 570-589:
    "cpu" gets ["fused"]), so the enumerator raises "No available sharding type and compute
    kernel combination ... compute device: cpu"; so is a cuda topology without SSD
    (EmbeddingEnumerator._filter_compute_kernels drops key_value, enumerators.py line 505-511).

Needs a Python with torchrec and fbgemm-gpu-cpu: EDO_TORCHREC_PYTHON, or BUILD/torchrec-venv
(scripts/torchrec-venv.sh). Exits 77 (skipped) without one.

    torchrec_key_value_test.py --build BUILD_DIR [--source SOURCE_DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from edo_job_env import HERE, skip
from torchrec_real_test import torchrec_python

MIB = 1 << 20
ROWS = 10_000_000
# Two ssd tables and a plain one. By hand (FBGEMM's L1: 32-way sets; TorchRec's SSD TBE builds
# min(int(MB x 2^20 / 32 / element bytes / dim), int(0.2 x rows / 32)) sets):
#  t_ssd  fp32, dim 64 (a set: 32 x 256 B = 8192 B): 5000 device rows -> 157 sets = 1286144 B
#         -> 2 MB -> 256 sets (8192 rows); 4194304 host rows x (256 + 8 + 32) B -> 2 GB.
#  t_half fp16, dim 128 (a set: 8192 B): 3000 device rows -> 94 sets = 770048 B -> 1 MB -> 128
#         sets (4096 rows); 10^7 host rows x (256 + 40) B = 2.76 GiB -> 3 GB.
#  t_served (an inference table: no constraint, its sizes for the unquantized sharder) fp32,
#         dim 32 (a set: 4096 B): 1000 device rows -> 32 sets = 131072 B -> 1 MB -> 256 sets
#         (8192 rows); 10^6 host rows x (128 + 40) B = 168000000 B -> 1 GB.
TABLES = {
    "t_ssd": {"rows": ROWS, "dim": 64, "dtype": "fp32", "device_rows": 5000, "host_rows": 4194304,
              "mb": 2, "gb": 2, "sets": 256, "precision": "FP32"},
    "t_half": {"rows": ROWS, "dim": 128, "dtype": "fp16", "device_rows": 3000, "host_rows": 10_000_000,
               "mb": 1, "gb": 3, "sets": 128, "precision": "FP16"},
    "t_served": {"rows": ROWS, "dim": 32, "dtype": "fp32", "device_rows": 1000, "host_rows": 1_000_000, "inference": True,
                 "mb": 1, "gb": 1, "sets": 256, "precision": "FP32"},
    "t_plain": {"rows": 1000, "dim": 16, "dtype": "fp32"},
}


def plan_document():
    tables = []
    for name, t in TABLES.items():
        elem = 2 if t["dtype"] == "fp16" else 4
        row = {"name": "m.ebc.embedding_bags." + name, "rows": t["rows"], "dim": t["dim"], "dtype": t["dtype"],
               "training": not t.get("inference"), "strategy": t["dtype"], "params": {}, "device_bytes": t["rows"] * t["dim"] * elem,
               "host_bytes": 0, "step_us": 1.0, "error": 0.0, "needs_retraining": False, "why": "hand-built"}
        if "device_rows" in t:
            row["strategy"] = "ssd"
            row["spec"] = t["dtype"]  # an ssd choice's row format
            # Every param edo tune's ssd candidate writes (ssd_candidates.cpp), as plan import reads them.
            row["params"] = {"device_cache_rows": t["device_rows"], "host_cache_rows": t["host_rows"],
                             "device_hit_rate": 0.5, "host_hit_rate": 0.3, "ssd_reads_per_step": 12.0,
                             "host_fetches_per_step": 20.0, "row_bytes": t["dim"] * elem, "host_link_gbs": 25.0,
                             "storage": "TorchRec's planner default of 100 MiB/s", "cache_policy": "lru",
                             "heldout": {"fit_fraction": 0.7, "sample_rate": 1.0, "heldout_sampled_refs": 1000}}
            row["device_bytes"] = t["sets"] * 32 * t["dim"] * elem
            row["host_bytes"] = t["host_rows"] * t["dim"] * elem
        tables.append(row)
    device = sum(t["device_bytes"] for t in tables)
    return {"schema": "edo.plan/1", "budget_bytes": device, "max_error": None, "backend": "cpu", "device": "test", "weights": "synthetic",
            "baseline": {"device_bytes": device, "step_us": 3.0}, "plan": {"device_bytes": device, "step_us": 3.0},
            "candidates_measured": len(tables), "frontier": [[device, 3.0]], "tables": tables}


def check(out, exported):
    bad = []

    def expect(ok, what):
        if not ok:
            bad.append(what)

    for name, t in TABLES.items():
        if "device_rows" not in t:
            expect(out["planned"][name]["compute_kernel"] == "fused", "%s planned %r" % (name, out["planned"][name]))
            continue
        kv = exported[name]
        expect(kv["max_l1_cache_size_mb"] == t["mb"] and kv["l2_cache_size_gb"] == t["gb"] and kv["l1_rows"] == 32 * t["sets"]
               and kv["l1_rows"] >= t["device_rows"] and kv["in_constraints"] == (not t.get("inference")),
               "%s key_value_tables %r" % (name, kv))
        if t.get("inference"):
            expect("quant) sharders have no key-value kernel" in out["edo_only_why"].get(name, ""),
                   "%s edo_only_why %r" % (name, out["edo_only_why"].get(name)))
        opts = out["cuda"].get(name, [])
        no_l1 = {o["sharding_type"]: o for o in out["cuda_no_l1"].get(name, [])}
        expect(opts and all(o["compute_kernel"] == "key_value" for o in opts), "%s cuda options %r" % (name, opts))
        for o in opts:
            elem = 2 if t["dtype"] == "fp16" else 4
            expect(o["max_l1_cache_size"] == t["mb"] and o["l2_cache_size"] == t["gb"], "%s option %r" % (name, o))
            expect(o["hbm"] - no_l1[o["sharding_type"]]["hbm"] == t["mb"] * MIB and o["ddr"] == 0
                   and o["ssd"] >= t["rows"] * t["dim"] * elem, "%s storage %r (without the L1: %r)"
                   % (name, o, no_l1[o["sharding_type"]]))
        p = out["planned"][name]
        expect(p == {"compute_kernel": "key_value", "max_l1_cache_size": t["mb"], "l2_cache_size": t["gb"]},
               "%s planned %r" % (name, p))
        tbe = [g for g in out["runtime"] if name in g["tables"]]
        # Every SSD TBE trains with row-wise Adagrad: fused_params names it for the trained tables
        # (FBGEMM's SSD TBE trains with nothing the job's adagrad maps to) and reaches them all.
        expect(len(tbe) == 1 and tbe[0] == {"tables": [name], "cache_sets": t["sets"], "l2_cache_size": t["gb"],
                                            "weights_precision": t["precision"], "optimizer": "EXACT_ROWWISE_ADAGRAD"},
               "%s SSD TBE %r" % (name, tbe))
        if not t.get("inference"):
            expect(kv.get("optimizer") == "EXACT_ROWWISE_ADAGRAD", "%s optimizer %r" % (name, kv.get("optimizer")))
    expect(out["sharder_kernels"]["cpu"] == ["fused"] and "key_value" in out["sharder_kernels"]["cuda"],
           "sharder kernels %r" % out["sharder_kernels"])
    expect("key_value" not in out["quant_sharder_kernels"], "quant sharder kernels %r" % out["quant_sharder_kernels"])
    for topo, device in (("cpu", "cpu"), ("no_ssd", "cuda")):
        err = out[topo].get("error", "")
        expect("No available sharding type and compute kernel combination" in err and "compute device: %s" % device in err,
               "%s: %r" % (topo, out[topo]))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.join(HERE, "..", "..", ".."))
    build = os.path.abspath(ap.parse_args().build)
    edo = os.path.join(build, "bin", "edo")
    if not os.path.exists(edo):
        skip("edo not built in %s" % build)
    py = torchrec_python(build)
    with tempfile.TemporaryDirectory() as tmp:
        plan_json, plan_py, tables = (os.path.join(tmp, f) for f in ("plan.json", "plan.py", "tables.json"))
        with open(plan_json, "w") as f:
            json.dump(plan_document(), f)
        with open(tables, "w") as f:
            json.dump({n: {"rows": t["rows"], "dim": t["dim"], "features": ["f_" + n]} for n, t in TABLES.items()}, f)
        r = subprocess.run([edo, "export", plan_json, "--format", "torchrec", "-o", plan_py], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAILED: edo export: " + r.stderr[-2000:])
        # The JSON plan written back carries the same KeyValueParams as the TorchRec file.
        r = subprocess.run([edo, "export", plan_json, "--format", "json"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("FAILED: edo export --format json: " + r.stderr[-2000:])
        as_json = {t["name"].rsplit(".", 1)[-1]: t.get("key_value_params") for t in json.loads(r.stdout)["tables"]}
        r = subprocess.run([py, os.path.join(HERE, "check_torchrec_key_value.py"), plan_py, tables], capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            sys.exit("FAILED: check_torchrec_key_value.py: " + r.stdout[-1000:] + r.stderr[-3000:])
        out = json.loads(r.stdout)
    exported = out["key_value_tables"]
    bad = check(out, exported)
    for name, kv in exported.items():
        want = {"max_l1_cache_size": kv["max_l1_cache_size_mb"], "l2_cache_size": kv["l2_cache_size_gb"], "l1_rows": kv["l1_rows"]}
        if as_json.get(name) != want:
            bad.append("%s: the JSON plan's key_value_params %r, the TorchRec file's %r" % (name, as_json.get(name), want))
    for b in bad:
        print("FAILED:", b)
    if bad:
        sys.exit(1)
    print("ok: %s on TorchRec's KEY_VALUE kernel as exported; cpu topology refused (%s)"
          % (", ".join("%s L1 %d rows / L2 %d GB" % (n, exported[n]["l1_rows"], exported[n]["l2_cache_size_gb"]) for n in exported),
             out["cpu"]["error"].split(".")[0]))


if __name__ == "__main__":
    main()
