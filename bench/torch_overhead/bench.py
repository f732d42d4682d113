#!/usr/bin/env python3
"""Step-time overhead of edo's PyTorch instrumentation on the DLRM-like job.

Runs examples/dlrm_like.py --bench (timed steps after warm-up, median ms per step) without
edo (the anchor) and under `edo record` with full counting (exact per-row counts, every
lookup), alternating the two several times in one run, and prints:

    baseline_ms_per_step  X     (median over rounds of each run's median step)
    traced_ms_per_step    Y
    overhead              Z     (Y / X - 1; target <= 0.05)

Usage: bench.py --build BUILD [--device cpu|cuda] [--rounds N] [--json FILE] [-- extra args]
Needs only the standard library itself; the job runs with $EDO_TEST_PYTHON, /usr/bin/python3
or python3 (the first that imports torch). Exits 77 when something it needs is missing.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def torch_python():
    for c in [os.environ.get("EDO_TEST_PYTHON"), "/usr/bin/python3", shutil.which("python3")]:
        if c and os.path.exists(c) and subprocess.run(
                [c, "-c", "import torch"], capture_output=True, env=env()).returncode == 0:
            return c
    return None


def env(extra=None):
    e = dict(os.environ)
    for k in ("LD_PRELOAD", "EDO_TRACE_LIB", "PYTHONPATH", "EDO_OUTPUT", "EDO_TORCH"):
        e.pop(k, None)
    if extra:
        e.update(extra)
    return e


def figure(out, key="ms_per_step"):
    m = re.search(r"^%s ([0-9.]+)$" % key, out, re.M)
    if not m:
        raise RuntimeError("no %s in output:\n%s" % (key, out))
    return float(m.group(1))


def ms_per_step(out):
    return figure(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 leaves a core to the tracer's thread on 2-core CI)")
    ap.add_argument("--json")
    ap.add_argument("extra", nargs="*", help="more dlrm_like.py arguments (after --)")
    a = ap.parse_args()

    edo = os.path.join(a.build, "bin", "edo")
    py = torch_python()
    if py is None:
        print("SKIP torch_overhead: no python with torch (set EDO_TEST_PYTHON)")
        return 77
    if not os.path.exists(edo) or subprocess.run([edo, "record", "--help"],
                                                 capture_output=True).returncode != 0:
        print("SKIP torch_overhead: %s has no 'record' command (build the tracer)" % edo)
        return 77
    job = [py, os.path.join(ROOT, "examples", "dlrm_like.py"), "--bench", "--device", a.device,
           "--steps", str(a.steps), "--warmup", str(a.warmup), "--batch", str(a.batch),
           "--threads", str(a.threads)] + a.extra
    tmp = tempfile.mkdtemp(prefix="edo-bench-")
    base, traced, sums = [], [], set()
    base_min, traced_min, base_cpu, traced_cpu = [], [], [], []
    hooks_only = []
    ab_off, ab_on, ab_off_cpu, ab_on_cpu = [], [], [], []
    lib = os.path.join(a.build, "lib", "libedo_trace.so")
    pkg = os.path.join(a.build, "lib", "python")
    try:
        for r in range(a.rounds):
            p = subprocess.run(job, capture_output=True, text=True, env=env(), timeout=600)
            if p.returncode != 0:
                raise RuntimeError("baseline run failed:\n" + p.stderr[-3000:])
            base.append(ms_per_step(p.stdout))
            base_min.append(figure(p.stdout, "min_ms_per_step"))
            base_cpu.append(figure(p.stdout, "cpu_ms_per_step"))
            sums.add(re.search(r"checksum (\w+)", p.stdout).group(1))
            db = os.path.join(tmp, "r%d.edodb" % r)
            p = subprocess.run([edo, "record", "-o", db, "--"] + job, capture_output=True,
                               text=True, env=env(), timeout=600)
            if p.returncode != 0:
                raise RuntimeError("traced run failed:\n" + p.stderr[-3000:])
            if "edo: " in p.stderr:
                sys.stderr.write(p.stderr)
            traced.append(ms_per_step(p.stdout))
            traced_min.append(figure(p.stdout, "min_ms_per_step"))
            traced_cpu.append(figure(p.stdout, "cpu_ms_per_step"))
            sums.add(re.search(r"checksum (\w+)", p.stdout).group(1))
            # in one process, alternating steps with edo off and on, counting inline
            # (EDO_ASYNC=0): robust to other load on the machine, and an upper bound (no
            # background thread on a spare core)
            p = subprocess.run([edo, "record", "-o", db + ".ab", "--"] + job + ["--ab"],
                               capture_output=True, text=True, timeout=600,
                               env=env({"EDO_ASYNC": "0"}))
            if p.returncode == 0:
                ab_off.append(figure(p.stdout, "ab_off_ms_per_step"))
                ab_on.append(figure(p.stdout, "ab_on_ms_per_step"))
                ab_off_cpu.append(figure(p.stdout, "ab_off_cpu_ms_per_step"))
                ab_on_cpu.append(figure(p.stdout, "ab_on_cpu_ms_per_step"))
            # the Python hooks alone: library preloaded without a collector (calls are no-ops)
            if os.path.exists(lib) and os.path.isdir(pkg):
                p = subprocess.run(job, capture_output=True, text=True, timeout=600, env=env({
                    "LD_PRELOAD": lib, "EDO_TRACE_LIB": lib,
                    "PYTHONPATH": os.pathsep.join([os.path.join(pkg, "edo_boot"), pkg])}))
                if p.returncode == 0:
                    hooks_only.append(ms_per_step(p.stdout))
            print("round %d: baseline %.3f ms/step (cpu %.3f), traced %.3f ms/step (cpu %.3f)"
                  % (r + 1, base[-1], base_cpu[-1], traced[-1], traced_cpu[-1]))
        rep = subprocess.run([edo, "report", db, "--json"], capture_output=True, text=True)
        lookups = None
        if rep.returncode == 0:
            j = json.loads(rep.stdout)
            lookups = sum(t.get("lookups", 0) for t in j.get("tables", []))
            counts = sorted(set(t.get("counts") for t in j.get("tables", [])))
        else:
            counts = []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    b = statistics.median(base)
    t = statistics.median(traced)
    ov = t / b - 1.0
    print("baseline_ms_per_step %.4f" % b)
    print("traced_ms_per_step %.4f" % t)
    print("overhead %.4f" % ov)
    bm, tm = min(base_min), min(traced_min)
    bc, tc = statistics.median(base_cpu), statistics.median(traced_cpu)
    if ab_off:
        ao, an = statistics.median(ab_off), statistics.median(ab_on)
        print("ab_off_ms_per_step %.4f" % ao)
        print("ab_on_ms_per_step %.4f" % an)
        print("ab_overhead %.4f (one process, steps alternating edo off/on, inline counting)"
              % (an / ao - 1.0))
        co, cn = statistics.median(ab_off_cpu), statistics.median(ab_on_cpu)
        print("ab_cpu_overhead %.4f (same, CPU time per step: %.3f vs %.3f ms)"
              % (cn / co - 1.0, co, cn))
    if hooks_only:
        ho = statistics.median(hooks_only)
        print("hooks_only_ms_per_step %.4f (python hooks, tracer inactive: %+.1f%%)"
              % (ho, 100.0 * (ho / b - 1.0)))
    print("baseline_min_ms_per_step %.4f" % bm)
    print("traced_min_ms_per_step %.4f" % tm)
    print("overhead_min %.4f" % (tm / bm - 1.0))
    print("baseline_cpu_ms_per_step %.4f" % bc)
    print("traced_cpu_ms_per_step %.4f" % tc)
    print("cpu_overhead %.4f" % (tc / bc - 1.0))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = -1.0
    print("load_average %.2f on %d cpus (other load makes wall-clock figures noisy; "
          "overhead_min and cpu_overhead are steadier)" % (load, os.cpu_count() or 0))
    print("torch_overhead: %s, batch %d, %d timed steps x %d rounds, threads %d: %+.1f%% "
          "(target <= 5%%), lookups recorded in the last traced run %s, counts %s, "
          "results identical across all runs: %s"
          % (a.device, a.batch, a.steps, a.rounds, a.threads, 100 * ov, lookups,
             ",".join(c for c in counts if c), len(sums) == 1))
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"benchmark": "torch_overhead", "device": a.device, "batch": a.batch,
                       "steps": a.steps, "rounds": a.rounds, "threads": a.threads,
                       "baseline_ms_per_step": b, "traced_ms_per_step": t, "overhead": ov,
                       "baseline_runs": base, "traced_runs": traced,
                       "baseline_min_ms_per_step": bm, "traced_min_ms_per_step": tm,
                       "overhead_min": tm / bm - 1.0,
                       "baseline_cpu_ms_per_step": bc, "traced_cpu_ms_per_step": tc,
                       "cpu_overhead": tc / bc - 1.0, "load_average": load,
                       "hooks_only_runs": hooks_only, "ab_off_runs": ab_off,
                       "ab_on_runs": ab_on, "ab_off_cpu_runs": ab_off_cpu,
                       "ab_on_cpu_runs": ab_on_cpu,
                       "ab_overhead": (statistics.median(ab_on) / statistics.median(ab_off) - 1.0)
                       if ab_off else None,
                       "lookups_last_run": lookups, "identical_results": len(sums) == 1},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
