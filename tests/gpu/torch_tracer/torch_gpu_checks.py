#!/usr/bin/env python3
"""PyTorch on CUDA under `edo record` (issue 9 items 1, 2, 4; issue 13's torch.profiler case).

    torch_gpu_checks.py --build BUILD_DIR [--python PY] [--json FILE]

Checks, each printed as PASS/FAIL with its figures:
  unharmed      the job (default settings) finishes under `edo record`, its first CUDA
                kernel included (torch.randint on cuda raised "invalid device function" before)
  identical     its parameters are bit-identical to a run without edo (when two runs without
                edo are identical to each other; otherwise the losses are compared closely and
                the reason is printed)
  memory        the recording's CUPTI memory timeline has events, its peak is at least
                torch.cuda.max_memory_allocated() of the job, the embedding table's bytes and
                optimizer state (Adam: 2x the weights) are recorded
  kernels       a kernel reading model.emb lists it, with launches and GPU time
  profiler      the job runs torch.profiler over CUDA under `edo record`: the profiler gets its
                CUDA kernel events (edo hands CUPTI over), edo says so in one line naming
                torch.profiler, and the tables and lookups are still recorded
Exit 0 when every check passes, 1 otherwise, 77 without a CUDA-capable torch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def clean_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "NVTX_INJECTION64_PATH", "EDO_CHANNEL", "EDO_OUTPUT", "EDO_TRACE_LIB"):
        env.pop(k, None)
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default=os.environ.get("EDO_TEST_PYTHON", sys.executable))
    ap.add_argument("--json")
    a = ap.parse_args()
    edo = os.path.join(a.build, "bin", "edo")
    py = a.python
    probe = run([py, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"], clean_env())
    if probe.returncode != 0:
        print("SKIP: %s has no torch with a usable CUDA device" % py)
        return 77
    tmp = tempfile.mkdtemp(prefix="edo_torch_gpu_")
    work = os.path.join(HERE, "workload.py")
    results, ok = {}, True

    def check(name, passed, detail):
        nonlocal ok
        ok &= bool(passed)
        results[name] = {"pass": bool(passed), "detail": detail}
        print("%s %s: %s" % ("PASS" if passed else "FAIL", name, detail))

    plain = [os.path.join(tmp, "plain%d.json" % i) for i in (1, 2)]
    for p in plain:
        r = run([py, work, "--out", p], clean_env())
        if r.returncode != 0:
            print("FAIL: the workload fails without edo:\n" + r.stderr[-3000:])
            return 1
    db = os.path.join(tmp, "run.edodb")
    traced = os.path.join(tmp, "traced.json")
    r = run([edo, "record", "-o", db, "--", py, work, "--out", traced], clean_env())
    check("unharmed", r.returncode == 0 and os.path.exists(traced),
          "exit %d%s" % (r.returncode, "" if r.returncode == 0 else ": " + r.stderr[-2000:]))
    if r.returncode != 0:
        return 1
    p1, p2, t = (json.load(open(f)) for f in (plain[0], plain[1], traced))
    if p1["sha256"] == p2["sha256"]:
        check("identical", t["sha256"] == p1["sha256"],
              "parameters sha256 %s with edo, %s without" % (t["sha256"][:16], p1["sha256"][:16]))
    else:
        close = all(abs(x - y) <= 1e-4 * max(1.0, abs(x)) for x, y in zip(p1["losses"], t["losses"]))
        check("identical", close, "two runs without edo differ already (nondeterministic kernels); "
              "losses with edo within 1e-4: %s" % close)
    rep = json.loads(run([edo, "report", "--json", db]).stdout or "{}")
    mem = rep.get("memory", {})
    peak = mem.get("peak_bytes", 0)
    tables = {x["name"]: x for x in rep.get("tables", [])}
    emb = next((x for n, x in tables.items() if n.endswith("emb")), None)
    # Adam keeps two moments per weight: optimizer state >= 2x the weights; gradients apart.
    mem_ok = (mem.get("timeline_events", 0) > 0 and peak >= t["max_memory_allocated"] and emb is not None
              and emb.get("weight_bytes") == 20000 * 64 * 4
              and emb.get("optimizer_bytes", 0) >= 2 * emb["weight_bytes"] and emb.get("grad_bytes", 0) > 0)
    check("memory", mem_ok, "timeline events %s, peak %s >= max_memory_allocated %s; emb weight bytes %s, "
          "optimizer %s, grad %s" % (mem.get("timeline_events"), peak, t["max_memory_allocated"],
                                     emb and emb.get("weight_bytes"), emb and emb.get("optimizer_bytes"),
                                     emb and emb.get("grad_bytes")))
    reading = [(k["name"], pt) for k in rep.get("kernels", []) for pt in k.get("per_table", [])
               if pt["table"].endswith("emb")]
    check("kernels", any(pt["launches"] > 0 and pt["total_ns"] > 0 for _, pt in reading),
          "%d kernel(s) read the embedding, e.g. %s" % (len(reading), reading[:2]))
    if emb is not None:
        print("  emb: lookups %s, unique %s, counts %s" % (emb.get("lookups"), emb.get("unique_rows"), emb.get("counts")))

    db2 = os.path.join(tmp, "profiled.edodb")
    prof = os.path.join(tmp, "profiled.json")
    r = run([edo, "record", "-o", db2, "--", py, work, "--out", prof, "--profile", "--steps", "5"], clean_env())
    lines = [l for l in r.stderr.splitlines() if l.startswith("edo: ")]
    pj = json.load(open(prof)) if os.path.exists(prof) else {}
    rep2 = json.loads(run([edo, "report", "--json", db2]).stdout or "{}") if r.returncode == 0 else {}
    looked = sum(x.get("lookups", 0) for x in rep2.get("tables", []))
    check("profiler", r.returncode == 0 and (pj.get("profiler_cuda_events") or 0) > 0 and len(lines) == 1
          and "torch.profiler" in lines[0] and looked > 0,
          "exit %d, profiler CUDA events %s, edo lines %s, lookups recorded %s"
          % (r.returncode, pj.get("profiler_cuda_events"), lines, looked))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"torch": t.get("torch"), "checks": results}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
