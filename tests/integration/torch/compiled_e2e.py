#!/usr/bin/env python3
"""Compiled models under `edo record` (issue 32, point 3): compiled_job.py's recommender trained
with torch.compile(fullgraph=True), with edo.instrument first, with mode="reduce-overhead"
(inductor), and as a torch.export'ed program. Each recording must hold, per table, exactly the
ids the job fed (every row's count, from the job's --truth file) and one step per optimizer
step; the job's losses must be the ones it computes without edo; and edo must not say that
lookups were not counted, nor blame a static binary.

    compiled_e2e.py fullgraph|instrument|reduce-overhead|export --build DIR [--source DIR]

Skipped (77) on a torch without torch.compile / torch.library.custom_op (Debian's 1.13: the
hooks work as before there, torch_e2e.py) and, for reduce-overhead, without a C compiler.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from edo_job_env import HERE, SKIP, run, setup, skip

JOB = os.path.join(HERE, "compiled_job.py")
STEPS = 4
CASES = {"fullgraph": ["--mode", "fullgraph"],
         "instrument": ["--mode", "fullgraph", "--instrument"],
         "reduce-overhead": ["--mode", "reduce-overhead"],
         "export": ["--mode", "export"]}


def main():
    case = sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None
    if case not in CASES:
        sys.stderr.write("usage: compiled_e2e.py %s --build DIR\n" % "|".join(CASES))
        return 2
    build, _source, edo, py, env = setup()
    probe = subprocess.run([py, "-c", "import torch, sys; sys.exit(0 if hasattr(torch, 'compile') "
                            "and hasattr(getattr(torch, 'library', None), 'custom_op') else 77)"],
                           capture_output=True, env=env)
    if probe.returncode == SKIP:
        skip("the torch of %s has no torch.compile / torch.library.custom_op (2.4+): compiled "
             "models are not counted by an operator there (set EDO_TEST_PYTHON to PyPI's torch: "
             "make torch-pypi)" % py)
    if case == "reduce-overhead" and not (shutil.which("cc") or shutil.which("gcc")):
        skip("no C compiler for inductor")
    tmp = tempfile.mkdtemp(prefix="edo-compiled-")
    try:
        return check(case, edo, py, env, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(case, edo, py, env, tmp):
    args = CASES[case] + ["--steps", str(STEPS)]
    truth_file = os.path.join(tmp, "truth.json")
    plain = run([py, JOB] + args, dict(env, EDO_TORCH="0"))
    want_losses = json.loads(plain.stdout.splitlines()[-1])
    db = os.path.join(tmp, "rec.edodb")
    r = run([edo, "record", "-o", db, "--", py, JOB] + args + ["--truth", truth_file], env)
    losses = json.loads(r.stdout.splitlines()[-1])
    truth = json.load(open(truth_file))
    rep = json.loads(run([edo, "report", db, "--json", "--top", "100000"], env).stdout)
    problems = []
    if losses != want_losses:
        problems.append("edo changed the job's losses: %s vs %s" % (losses, want_losses))
    for bad in ("not counted", "statically linked", "internal error", "graph break"):
        if bad in r.stderr:
            problems.append("edo's stderr says %r:\n%s" % (bad, r.stderr[-2000:]))
    tables = {t["name"]: t for t in rep.get("tables", [])}
    if sorted(tables) != sorted(truth["tables"]):
        problems.append("tables %s, the job has %s" % (sorted(tables), sorted(truth["tables"])))
    for name, fed in truth["tables"].items():
        t = tables.get(name)
        if t is None:
            continue
        total = sum(fed.values())
        if t.get("lookups") != total:
            problems.append("%s: %r lookups recorded, %d fed" % (name, t.get("lookups"), total))
        if t.get("counts") != "exact":
            problems.append("%s: counts are %r, expected exact" % (name, t.get("counts")))
        got = {str(row): c for row, c in t.get("top_rows", [])}
        if got != fed:
            diff = sorted((k, got.get(k), fed.get(k)) for k in set(got) | set(fed) if got.get(k) != fed.get(k))
            problems.append("%s: per-row counts differ in %d rows, e.g. (row, edo, fed) %s"
                            % (name, len(diff), diff[:5]))
    steps = rep.get("session", {}).get("steps")
    if steps != truth["steps"]:
        problems.append("%r steps recorded, the job made %d optimizer steps" % (steps, truth["steps"]))
    if problems:
        print("FAILED %s:\n  %s" % (case, "\n  ".join(problems)))
        return 1
    print("ok %s: %s, %d steps, losses unchanged" % (
        case, ", ".join("%s %d lookups" % (n, tables[n]["lookups"]) for n in sorted(tables)), steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
