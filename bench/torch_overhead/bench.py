#!/usr/bin/env python3
"""Step-time overhead of edo's PyTorch instrumentation on the DLRM-like job.

Runs examples/dlrm_like.py --bench (timed steps after warm-up) in one run, and prints the
headline (issue 32 point 2: what a user pays, whole processes), each figure beside its target:

    process_overhead    Z   (target <= 0.03) whole processes without and with `edo record`
                            (default settings: exact per-row counts and the exact LRU curve of
                            every lookup, counted on the tracer's thread), alternating ABBA over
                            the rounds; the median of the per-round ratios of median step time,
                            minus 1.
    cpu_overhead        Z   (target <= 0.05) the same processes' CPU time per step, torch's and
                            the tracer's threads, median over the rounds, minus 1.
    run_overhead        Z   the same processes' whole wall time, start to exit (python and torch
                            start-up, batch making, edo's final flush and the collector
                            included), median of the per-round ratios, minus 1.

and diagnostics:

    overhead            Z   one process under `edo record`, timed steps with edo's hooks off,
                            on, on, off, ...; the median over every quad of neighbouring steps
                            (all rounds) of on-time / off-time, minus 1. Both kinds of step run
                            on the same process, heap and pages (free of this VM's +-20 %
                            process-to-process noise), but the tracer's thread works on a spare
                            core unseen: it understates what a whole process pays.
    inline_overhead     Z   the same with EDO_ASYNC=0 (counting inline in the job's thread): an
                            upper bound for a machine with no spare core.
    hooks_only ...          the Python hooks with the library preloaded but inactive.

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
import time

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
    ap.add_argument("--steps", type=int, default=40)
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
    torch_version = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True, env=env()).stdout.strip()
    job = [py, os.path.join(ROOT, "examples", "dlrm_like.py"), "--bench", "--device", a.device,
           "--steps", str(a.steps), "--warmup", str(a.warmup), "--batch", str(a.batch),
           "--threads", str(a.threads)] + a.extra
    tmp = tempfile.mkdtemp(prefix="edo-bench-")
    base, traced, base_cpu, traced_cpu, sums = [], [], [], [], set()
    base_run, traced_run, run_ratio = [], [], []
    quads, inline_quads, hooks_only, pair_ratio = [], [], [], []
    lib = os.path.join(a.build, "lib", "libedo_trace.so")
    pkg = os.path.join(a.build, "lib", "python")
    lookups, counts = None, []

    last_wall = [0.0]

    def run(cmd, what, extra_env=None):
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(extra_env), timeout=600)
        last_wall[0] = time.monotonic() - t0
        if p.returncode != 0:
            raise RuntimeError("%s run failed (exit %d):\n%s" % (what, p.returncode, p.stderr[-3000:]))
        if "edo: " in p.stderr and "edo: recorded" not in p.stderr:
            sys.stderr.write(p.stderr)
        sums.add(re.search(r"checksum (\w+)", p.stdout).group(1))
        return p.stdout

    def ratios(out):
        m = re.search(r"^ab_quad_ratios(.*)$", out, re.M)
        return [float(x) for x in m.group(1).split()] if m else []

    try:
        for r in range(a.rounds):
            db = os.path.join(tmp, "r%d.edodb" % r)
            # whole processes, ABBA over the rounds
            order = ("base", "traced") if r % 2 == 0 else ("traced", "base")
            for kind in order:
                if kind == "base":
                    out = run(job, "baseline")
                    base.append(ms_per_step(out))
                    base_cpu.append(figure(out, "cpu_ms_per_step"))
                    base_run.append(last_wall[0])
                else:
                    out = run([edo, "record", "-o", db, "--"] + job, "traced")
                    traced.append(ms_per_step(out))
                    traced_cpu.append(figure(out, "cpu_ms_per_step"))
                    traced_run.append(last_wall[0])
            pair_ratio.append(traced[-1] / base[-1])
            run_ratio.append(traced_run[-1] / base_run[-1])
            # one process, hooks off/on in ABBA quads: default settings, then inline counting
            quads += ratios(run([edo, "record", "-o", db + ".ab", "--"] + job + ["--ab"], "A/B"))
            inline_quads += ratios(run([edo, "record", "-o", db + ".abi", "--"] + job + ["--ab"],
                                       "inline A/B", {"EDO_ASYNC": "0"}))
            # the Python hooks alone: library preloaded without a collector (calls are no-ops)
            if os.path.exists(lib) and os.path.isdir(pkg):
                out = run(job, "hooks-only", {
                    "LD_PRELOAD": lib, "EDO_TRACE_LIB": lib,
                    "PYTHONPATH": os.pathsep.join([os.path.join(pkg, "edo_boot"), pkg])})
                hooks_only.append(ms_per_step(out))
            print("round %d: baseline %.3f ms/step (cpu %.3f), traced %.3f ms/step (cpu %.3f), "
                  "A/B quads so far: median on/off %.4f over %d"
                  % (r + 1, base[-1], base_cpu[-1], traced[-1], traced_cpu[-1],
                     statistics.median(quads) if quads else float("nan"), len(quads)))
        rep = subprocess.run([edo, "report", db, "--json"], capture_output=True, text=True)
        if rep.returncode == 0:
            j = json.loads(rep.stdout)
            lookups = sum(t.get("lookups", 0) for t in j.get("tables", []))
            counts = sorted(set(t.get("counts") for t in j.get("tables", [])))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not quads or not inline_quads:
        print("torch_overhead: the A/B runs printed no quads (steps < 4?)", file=sys.stderr)
        return 1
    ov = statistics.median(quads) - 1.0
    iov = statistics.median(inline_quads) - 1.0
    b, t = statistics.median(base), statistics.median(traced)
    pov = statistics.median(pair_ratio) - 1.0
    bc, tc = statistics.median(base_cpu), statistics.median(traced_cpu)
    cov = tc / bc - 1.0
    rov = statistics.median(run_ratio) - 1.0

    def met(ok):
        return "met" if ok else "MISSED"

    print("baseline_ms_per_step %.4f" % b)
    print("traced_ms_per_step %.4f" % t)
    print("== headline: whole processes, default settings, %d ABBA rounds ==" % a.rounds)
    print("process_overhead %.4f (target <= 0.03: %s; median step time, round ratios: %s)"
          % (pov, met(pov <= 0.03), " ".join("%.3f" % x for x in pair_ratio)))
    print("cpu_overhead %.4f (target <= 0.05: %s; process CPU per step, torch's and the tracer's "
          "threads: %.3f vs %.3f ms)" % (cov, met(cov <= 0.05), bc, tc))
    print("run_overhead %.4f (whole run, start to exit, collector included; round ratios: %s)"
          % (rov, " ".join("%.3f" % x for x in run_ratio)))
    print("== diagnostics ==")
    print("overhead %.4f (one process, hooks off/on in ABBA quads, default settings; "
          "median of %d quads, range %.4f .. %.4f)"
          % (ov, len(quads), min(quads) - 1.0, max(quads) - 1.0))
    print("inline_overhead %.4f (same with EDO_ASYNC=0, counting in the job's thread; %d quads)"
          % (iov, len(inline_quads)))
    ho = statistics.median(hooks_only) if hooks_only else None
    if ho is not None:
        print("hooks_only_ms_per_step %.4f (python hooks, tracer inactive: %+.1f%% vs baseline; "
              "whole processes, as noisy as process_overhead)" % (ho, 100.0 * (ho / b - 1.0)))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = -1.0
    print("load_average %.2f on %d cpus" % (load, os.cpu_count() or 0))
    print("torch_overhead: %s, torch %s, batch %d, %d timed steps x %d rounds, threads %d: whole "
          "process %+.1f%% (target <= 3%%: %s), CPU %+.1f%% (target <= 5%%: %s); lookups recorded "
          "in the last traced run %s, counts %s, results identical across all runs: %s"
          % (a.device, torch_version, a.batch, a.steps, a.rounds, a.threads, 100 * pov,
             met(pov <= 0.03), 100 * cov, met(cov <= 0.05), lookups,
             ",".join(c for c in counts if c), len(sums) == 1))
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"benchmark": "torch_overhead", "device": a.device, "batch": a.batch,
                       "steps": a.steps, "rounds": a.rounds, "threads": a.threads,
                       "torch": torch_version, "run_overhead": rov, "run_round_ratios": run_ratio,
                       "baseline_run_s": base_run, "traced_run_s": traced_run,
                       "overhead": ov, "quad_ratios": quads,
                       "inline_overhead": iov, "inline_quad_ratios": inline_quads,
                       "process_overhead": pov, "process_round_ratios": pair_ratio,
                       "baseline_ms_per_step": b, "traced_ms_per_step": t,
                       "baseline_runs": base, "traced_runs": traced,
                       "baseline_cpu_ms_per_step": bc, "traced_cpu_ms_per_step": tc,
                       "cpu_overhead": tc / bc - 1.0, "load_average": load,
                       "hooks_only_runs": hooks_only,
                       "lookups_last_run": lookups, "identical_results": len(sums) == 1},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
