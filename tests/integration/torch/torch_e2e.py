#!/usr/bin/env python3
"""End-to-end tests of edo's PyTorch instrumentation, as a user meets it.

    torch_e2e.py CASE --build BUILD_DIR [--source SOURCE_DIR] [--device cpu|cuda] [--json FILE]

CASE:
  dlrm        examples/dlrm_like.py under `edo record`: names, exact per-row counts against
              the script's own ground truth, optimizer state bytes, steps, bit-identical
              results against a run without edo.
  llm         examples/llm_like.py under `edo record` (exits 3 on purpose): the same, plus
              the tied LM head and the exit code kept.
  dlrm-output-file  README's recipe without the collector, as written: only LD_PRELOAD and
              EDO_OUTPUT set by hand (the library sets up the Python hook itself), then
              `edo import`: the same checks as dlrm.
  llm-env     the variables `edo env -o FILE` prints, eval'ed by a shell that starts the job,
              then `edo import`: the same checks as llm (the exit code is the job's own).
  no-preload  the package on PYTHONPATH without libedo_trace.so: one warning, same results.
  disabled    EDO_TORCH=0 under `edo record`: no table, same results.
  no-torch    a job that never imports torch, and a python without torch: untouched.
  unit        the fake-backend unit tests (test_hooks_fake.py, test_compiled_fake.py,
              test_fastcount_fake.py).

This driver needs only the standard library; the workloads run with a torch-capable
interpreter: $EDO_TEST_PYTHON, else /usr/bin/python3, else python3 on PATH. Without one,
or without the edo binary / tracer, the case exits 77 (ctest: skipped) with the reason.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def find_torch_python():
    cands = []
    if os.environ.get("EDO_TEST_PYTHON"):
        cands.append(os.environ["EDO_TEST_PYTHON"])
    cands += ["/usr/bin/python3", shutil.which("python3") or ""]
    tried = []
    for c in cands:
        if not c or c in tried or not os.path.exists(c):
            continue
        tried.append(c)
        try:
            r = subprocess.run([c, "-c", "import torch; print(torch.__version__, "
                                "int(torch.cuda.is_available()))"],
                               capture_output=True, text=True, timeout=600,
                               env=clean_env())
            if r.returncode == 0:
                ver, cuda = r.stdout.split()
                return c, ver, cuda == "1"
        except Exception:
            pass
    raise Skip("no python interpreter with torch (tried %s; set EDO_TEST_PYTHON)"
               % (", ".join(tried) or "nothing"))


def clean_env(extra=None):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "EDO_TRACE_LIB", "EDO_OUTPUT", "PYTHONPATH", "EDO_TORCH",
              "NVTX_INJECTION64_PATH"):
        env.pop(k, None)
    env.setdefault("OMP_NUM_THREADS", "2")
    if extra:
        env.update(extra)
    return env


def preload_env(lib):
    """LD_PRELOAD of the README's recipe. In a sanitizer build (ctest sets
    EDO_SANITIZER_PRELOAD there: cmake/EdoSanitizerTestEnv.cmake) the sanitizer runtime comes
    first, as `edo record` and `edo env` put it (it refuses to start after libedo_trace.so),
    and the interpreter's own leaks are not reported, as under `edo record`."""
    runtime = os.environ.get("EDO_SANITIZER_PRELOAD", "")
    if not runtime:
        return {"LD_PRELOAD": lib}
    return {"LD_PRELOAD": runtime + ":" + lib,
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS") or "detect_leaks=0"}


def run(cmd, env, timeout=600, expect=0, what=None):
    t0 = time.time()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    dt = time.time() - t0
    sys.stdout.write("$ %s  [rc %d, %.1f s]\n" % (" ".join(cmd), r.returncode, dt))
    if expect is not None and r.returncode != expect:
        raise Fail("%s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s"
                   % (what or cmd[0], r.returncode, expect, r.stdout[-4000:], r.stderr[-4000:]))
    return r


class Ctx(object):
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.source = os.path.abspath(args.source or os.path.join(HERE, "..", "..", ".."))
        self.edo = os.path.join(self.build, "bin", "edo")
        self.lib = os.path.join(self.build, "lib", "libedo_trace.so")
        staged = os.path.join(self.build, "lib", "python")
        if os.path.exists(os.path.join(staged, "edo", "__init__.py")):
            self.pkg = staged
        else:
            self.pkg = os.path.join(self.source, "profiler", "python")
        self.tmp = tempfile.mkdtemp(prefix="edo-torch-")
        self.results = {}

    def need_record(self):
        if not os.path.exists(self.edo):
            raise Skip("edo binary not built (%s)" % self.edo)
        if not os.path.exists(self.lib):
            raise Skip("libedo_trace.so not built (%s)" % self.lib)
        r = subprocess.run([self.edo, "record", "--help"], capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip("this edo has no 'record' command yet")

    def script(self, workload):
        return os.path.join(self.source, "examples", workload + ".py")

    def path(self, name):
        return os.path.join(self.tmp, name)


def workload_args(ctx):
    a = ["--device", ctx.args.device]
    if ctx.args.steps:
        a += ["--steps", str(ctx.args.steps)]
    return a


def compare_outputs(ctx, a_file, b_file, label):
    a = json.load(open(a_file))
    b = json.load(open(b_file))
    if ctx.args.device == "cpu":
        if a != b:
            raise Fail("%s: results differ with edo (losses %s vs %s, checksum %s vs %s)"
                       % (label, a["losses"][:3], b["losses"][:3], a["checksum"], b["checksum"]))
        return True
    # CUDA kernels with atomics are not bit-reproducible run to run: compare closely and say.
    same = a == b
    for x, y in zip(a["losses"], b["losses"]):
        if abs(x - y) > 1e-4 * max(1.0, abs(x)):
            raise Fail("%s: losses differ with edo: %s vs %s" % (label, a["losses"], b["losses"]))
    return same


def report(ctx, db, top):
    r = run([ctx.edo, "report", db, "--json", "--top", str(top)], os.environ.copy(),
            what="edo report")
    return json.loads(r.stdout)


def check_report(ctx, rep, gt, expect_exit):
    problems = []
    tables = {t["name"]: t for t in rep["tables"]}
    want = gt["tables"]
    for name, g in want.items():
        t = tables.get(name)
        if "tied_to" in g:
            owner = tables.get(g["tied_to"])
            tied = set((owner or {}).get("tied_with", [])) | set((t or {}).get("tied_with", []))
            if name not in tied and g["tied_to"] not in tied:
                problems.append("tie %s <-> %s not recorded (tied_with of %s: %s)"
                                % (g["tied_to"], name, g["tied_to"],
                                   (owner or {}).get("tied_with")))
            if t is not None and t.get("lookups", 0) != 0:
                problems.append("tied name %s has %d lookups of its own (double counting)"
                                % (name, t["lookups"]))
            continue
        if t is None:
            problems.append("table %s missing (report has: %s)" % (name, sorted(tables)))
            continue
        for k in ("rows", "dim", "dtype", "lookups", "unique_rows"):
            if t.get(k) != g[k]:
                problems.append("%s: %s is %r, fed %r" % (name, k, t.get(k), g[k]))
        if t.get("counts") != "exact":
            problems.append("%s: counts are %r, expected exact" % (name, t.get("counts")))
        got = {str(r): c for r, c in t.get("top_rows", [])}
        if got != g["counts"]:
            diff = [(r, got.get(r), g["counts"].get(r)) for r in set(got) | set(g["counts"])
                    if got.get(r) != g["counts"].get(r)]
            problems.append("%s: per-row counts differ in %d rows, e.g. (row, edo, fed) %s"
                            % (name, len(diff), sorted(diff)[:5]))
        want_dev = "cuda" if ctx.args.device == "cuda" else "host"
        if not str(t.get("device", "")).startswith(want_dev):
            problems.append("%s: device %r, expected %s" % (name, t.get("device"), want_dev))
    extra = sorted(set(tables) - set(want))
    if extra:
        problems.append("unexpected tables: %s" % extra)
    s = rep.get("session", {})
    if expect_exit is not None and s.get("exit_code") != expect_exit:
        problems.append("session exit_code %r, expected %d" % (s.get("exit_code"), expect_exit))
    if s.get("steps") != gt["steps"]:
        problems.append("session steps %r, expected %d (one per optimizer step round)"
                        % (s.get("steps"), gt["steps"]))
    if rep.get("dropped_events"):
        problems.append("dropped_events %r" % rep.get("dropped_events"))
    return problems, tables


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def case_record(ctx, workload, expect_exit, how="record"):
    """how: "record" (edo record), "output-file" (LD_PRELOAD + EDO_OUTPUT by hand, then edo
    import), "env" (eval "$(edo env -o FILE)" in the shell that starts the job, then import)."""
    ctx.need_record()
    py, ver = ctx.python
    script = ctx.script(workload)
    plain = ctx.path("plain.json")
    run([py, script, "--outputs", plain] + workload_args(ctx), clean_env(), what="plain run")
    db = ctx.path("run.edodb")
    gt_file = ctx.path("gt.json")
    traced = ctx.path("traced.json")
    job = [py, script, "--ground-truth", gt_file, "--outputs", traced,
           "--exit-code", str(expect_exit)] + workload_args(ctx)
    t0 = time.time()
    if how == "record":
        r = run([ctx.edo, "record", "-o", db, "--"] + job, clean_env(), expect=expect_exit,
                what="edo record")
    else:
        trace = ctx.path("run.edotrace")
        if how == "output-file":
            r = run(job, clean_env(dict(preload_env(ctx.lib), EDO_OUTPUT=trace)),
                    expect=expect_exit, what="LD_PRELOAD + EDO_OUTPUT run")
        else:
            line = 'eval "$(%s env -o %s)" && exec %s' % (
                sh_quote(ctx.edo), sh_quote(trace), " ".join(sh_quote(a) for a in job))
            r = run(["/bin/sh", "-c", line], clean_env(), expect=expect_exit,
                    what="a job started under edo env")
        traces = [trace] + sorted(ctx.path(f) for f in os.listdir(ctx.tmp)
                                  if f.startswith("run.edotrace."))
        run([ctx.edo, "import"] + traces + ["-o", db], os.environ.copy(), what="edo import")
        expect_exit = None  # no collector waited for the job: its exit code is not recorded
    record_s = time.time() - t0
    if "edo: internal error" in r.stderr or "Traceback" in r.stderr:
        raise Fail("the traced job reported an error:\n" + r.stderr[-4000:])
    if "not loaded" in r.stderr:
        raise Fail("under edo record the hook did not find libedo_trace.so:\n" + r.stderr)
    identical = compare_outputs(ctx, plain, traced, workload)
    gt = json.load(open(gt_file))
    top = max(t["rows"] for t in gt["tables"].values()) + 1
    rep = report(ctx, db, top)
    problems, tables = check_report(ctx, rep, gt, expect_exit)
    # memory in named parts: weights, optimizer state (Adam: two moments), gradients
    for name, t in tables.items():
        g = gt["tables"].get(name, {})
        if "tied_to" in g or name not in gt["tables"]:
            continue
        weights = t["rows"] * t["dim"] * {"fp32": 4, "fp16": 2, "bf16": 2}.get(t["dtype"], 1)
        if t.get("weight_bytes") != weights:
            problems.append("%s: weight_bytes %r, expected %d" % (name, t.get("weight_bytes"), weights))
        adam_like = not (workload == "dlrm_like" and name == "ad")   # "ad" is trained by SGD
        need = 2 * weights if adam_like else 0
        if t.get("optimizer_bytes", 0) < need or (not adam_like and t.get("optimizer_bytes") != 0):
            problems.append("%s: optimizer_bytes %r, expected %s (optimizer state)"
                            % (name, t.get("optimizer_bytes"), ">= %d" % need if need else "0 (SGD)"))
        if not t.get("grad_bytes"):
            problems.append("%s: grad_bytes %r, expected > 0 (gradients)" % (name, t.get("grad_bytes")))
        parts = t.get("weight_bytes", 0) + t.get("optimizer_bytes", 0) + t.get("grad_bytes", 0)
        if t.get("total_bytes") != parts:
            problems.append("%s: total_bytes %r is not weight + optimizer + grad bytes (%d)"
                            % (name, t.get("total_bytes"), parts))
    if ctx.args.device == "cuda" and not rep.get("memory", {}).get("timeline_events"):
        problems.append("no CUDA memory timeline (CUPTI) in the recording")
    summary = {
        "workload": workload, "device": ctx.args.device, "python": py, "torch": ver,
        "record_seconds": round(record_s, 2), "bit_identical": identical,
        "tables": {n: {k: t.get(k) for k in ("rows", "dim", "lookups", "unique_rows", "weight_bytes",
                                              "optimizer_bytes", "grad_bytes", "tied_with")}
                   for n, t in tables.items()},
        "steps": rep.get("session", {}).get("steps"),
        "exit_code": rep.get("session", {}).get("exit_code"),
        "timeline_events": rep.get("memory", {}).get("timeline_events"),
        "problems": problems,
    }
    ctx.results[workload] = summary
    for n, t in sorted(summary["tables"].items()):
        print("  %-45s lookups %-8s unique %-7s weights %-9s optimizer %-9s grads %-9s tied %s"
              % (n, t["lookups"], t["unique_rows"], t["weight_bytes"], t["optimizer_bytes"],
                 t["grad_bytes"], t["tied_with"]))
    print("  steps %s, exit %s, bit-identical %s" % (summary["steps"], summary["exit_code"],
                                                   identical))
    if problems:
        raise Fail("\n".join(problems))


def case_no_preload(ctx):
    py, _ = ctx.python
    script = ctx.script("llm_like")
    plain = ctx.path("plain.json")
    run([py, script, "--outputs", plain, "--steps", "3"], clean_env(), what="plain run")
    out = ctx.path("hooked.json")
    pp = os.pathsep.join([os.path.join(ctx.pkg, "edo_boot"), ctx.pkg])
    r = run([py, script, "--outputs", out, "--steps", "3"], clean_env({"PYTHONPATH": pp}),
            what="run without the tracer")
    lines = [l for l in r.stderr.splitlines() if l.startswith("edo:")]
    if len(lines) != 1 or "not loaded" not in lines[0]:
        raise Fail("expected exactly one 'not loaded' warning, stderr was:\n" + r.stderr)
    compare_outputs(ctx, plain, out, "no-preload")
    # import edo by hand, too: instrument/step are no-ops, nothing raises
    r = run([py, "-c", "import torch, edo; m = torch.nn.Embedding(4, 2); edo.instrument(m); "
             "m(torch.tensor([1])); edo.step(); print(edo.available())"],
            clean_env({"PYTHONPATH": ctx.pkg}), what="import edo without the tracer")
    if r.stdout.strip() != "False":
        raise Fail("edo.available() should be False without the tracer: " + r.stdout)
    print("  one warning: %s" % lines[0])


def case_disabled(ctx):
    py, _ = ctx.python
    script = ctx.script("dlrm_like")
    plain = ctx.path("plain.json")
    run([py, script, "--outputs", plain, "--steps", "3"], clean_env(), what="plain run")
    # EDO_TORCH=0 with the package on PYTHONPATH: silent, untouched
    pp = os.pathsep.join([os.path.join(ctx.pkg, "edo_boot"), ctx.pkg])
    out = ctx.path("off.json")
    r = run([py, script, "--outputs", out, "--steps", "3"],
            clean_env({"PYTHONPATH": pp, "EDO_TORCH": "0"}), what="EDO_TORCH=0 run")
    if "edo:" in r.stderr:
        raise Fail("EDO_TORCH=0 should be silent, stderr:\n" + r.stderr)
    compare_outputs(ctx, plain, out, "EDO_TORCH=0")
    ctx.need_record()
    db = ctx.path("off.edodb")
    out2 = ctx.path("off-record.json")
    run([ctx.edo, "record", "-o", db, "--", py, script, "--outputs", out2, "--steps", "3"],
        clean_env({"EDO_TORCH": "0"}), what="edo record with EDO_TORCH=0")
    compare_outputs(ctx, plain, out2, "EDO_TORCH=0 under edo record")
    rep = report(ctx, db, 0)
    if rep["tables"]:
        raise Fail("EDO_TORCH=0 recorded tables: %s" % [t["name"] for t in rep["tables"]])
    print("  EDO_TORCH=0: no tables, same results")


def case_no_torch(ctx):
    """A Python job that never imports torch, and an interpreter without torch at all."""
    ctx.need_record()
    py, _ = ctx.python
    db = ctx.path("nt.edodb")
    r = run([ctx.edo, "record", "-o", db, "--", py, "-c",
             "import sys; print('torch' in sys.modules, 'edo' in sys.modules)"],
            clean_env(), what="a job without torch")
    if r.stdout.strip() != "False False":
        raise Fail("the boot hook imported torch or edo: " + r.stdout)
    if any(l.startswith("edo: ") for l in r.stderr.splitlines()):
        raise Fail("unexpected edo warning:\n" + r.stderr)
    others = []
    for c in ["python3", "python3.11", "python3.12", "python"]:
        w = shutil.which(c)
        if w and os.path.realpath(w) != os.path.realpath(py):
            t = subprocess.run([w, "-c", "import torch"], capture_output=True, env=clean_env())
            if t.returncode != 0:
                others.append(w)
                break
    for w in others:
        r = run([ctx.edo, "record", "-o", ctx.path("nt2.edodb"), "--", w, "-c",
                 "import edo; print(edo.available(), edo.step(), edo.tables())"],
                clean_env(), what="python without torch")
        if r.stdout.strip() != "True 0 OrderedDict()":
            raise Fail("%s without torch: %r" % (w, r.stdout))
        if any(l.startswith("edo: ") for l in r.stderr.splitlines()):
            raise Fail("unexpected edo warning:\n" + r.stderr)
        print("  %s (no torch): edo importable, calls reach the tracer" % w)
    rep = report(ctx, db, 0)
    if rep["tables"]:
        raise Fail("tables recorded for a job without torch")
    print("  a job that never imports torch: untouched")


def case_unit(ctx):
    py, _ = ctx.python
    # test_compiled_fake.py: edo's operator under torch.compile / torch.export (skips itself on
    # a torch without torch.library.custom_op); test_fastcount_fake.py: the forward's C fast path.
    for tests in ("test_hooks_fake.py", "test_compiled_fake.py", "test_fastcount_fake.py"):
        r = run([py, os.path.join(HERE, tests), "-v"],
                clean_env({"PYTHONPATH": ctx.pkg}), expect=None)
        sys.stdout.write(r.stderr[-6000:])
        if r.returncode != 0:
            raise Fail("unit tests failed: " + tests)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=["dlrm", "llm", "dlrm-output-file", "llm-env", "no-preload",
                                     "disabled", "no-torch", "unit"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--source")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--json", help="write the measured summary here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    ctx = Ctx(args)
    rc = 0
    try:
        py, ver, cuda = find_torch_python()
        ctx.python = (py, ver)
        if args.device == "cuda" and not cuda:
            raise Skip("%s (torch %s): torch.cuda.is_available() is False" % (py, ver))
        print("python: %s (torch %s), package: %s" % (ctx.python[0], ctx.python[1], ctx.pkg))
        if args.case == "dlrm":
            case_record(ctx, "dlrm_like", 0)
        elif args.case == "llm":
            case_record(ctx, "llm_like", 3)
        elif args.case == "dlrm-output-file":
            case_record(ctx, "dlrm_like", 0, how="output-file")
        elif args.case == "llm-env":
            case_record(ctx, "llm_like", 3, how="env")
        elif args.case == "no-preload":
            case_no_preload(ctx)
        elif args.case == "disabled":
            case_disabled(ctx)
        elif args.case == "no-torch":
            case_no_torch(ctx)
        else:
            case_unit(ctx)
        print("PASS %s" % args.case)
    except Skip as e:
        print("SKIP %s: %s" % (args.case, e))
        rc = SKIP
    except Fail as e:
        print("FAIL %s:\n%s" % (args.case, e))
        rc = 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timed out: %s" % (args.case, e))
        rc = 1
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"case": args.case, "rc": rc, "results": ctx.results}, f, indent=2)
        if args.keep:
            print("kept %s" % ctx.tmp)
        else:
            shutil.rmtree(ctx.tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
