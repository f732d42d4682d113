#!/usr/bin/env python3
"""Facts of the real CUDA/PyTorch stack that the fake stack (tests/integration/fake_gpu) and the
tracer assume (issue 21), each settled on a GPU in seconds and printed as one line:

    FACT <name> PASS|FAIL <figures>

    stack_facts.py --build BUILD_DIR [--python PY]

  graph_capture       an nn.Embedding step inside torch.cuda.graph, replayed 10 times, with and
                      without `edo record` (EDO_FLUSH_MS=10): the capture succeeds and the
                      outputs are identical
  global_captures     30 torch.cuda.graph captures (GLOBAL mode, the default) while edo flushes
                      every 10 ms: none invalidated
  visible_devices     CUDA_VISIBLE_DEVICES set after `import torch`, before the first CUDA call:
                      the job sees the devices it chose, with and without edo
  launch_us           microseconds per launch (a tiny kernel, 20000 launches), without and with
                      edo, side by side (target: under 1 us added)
  device_memory       EDO_MAX_DEVICE_MB=16: two embeddings read with device indices, one whose
                      exact counters (4M rows, 16 MB) do not fit: it is counted on the host
                      (device_memory_bound_tables 1, every lookup counted), and `edo report
                      --json` says what edo's own device memory was (at most 16 MiB) next to
                      what cudaMemGetInfo saw go missing beside torch's reserved memory
  compiled_graphs     torch.compile(mode="reduce-overhead") with
                      PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True under edo: its report ties
                      embedding kernels to the table
  fork_workers        8 children os.fork'ed (host work only, then os._exit, as DataLoader workers
                      do) from a CUDA job while another thread launches embeddings, under edo:
                      none hangs (edo's CUPTI state a child inherits, cupti_state.h)
Exit 0 when every fact passes, 1 otherwise, 77 without a CUDA-capable torch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

JOBS = {
    "graph": r'''
import sys, torch
torch.manual_seed(0)
emb = torch.nn.Embedding(1000, 16).cuda()
ids = torch.randint(0, 1000, (4096,), device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        out = emb(ids)  # warm-up outside the capture
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = emb(ids)
for _ in range(10):
    g.replay()
torch.cuda.synchronize()
print("sum %.6f" % out.double().sum().item())
''',
    "captures": r'''
import torch, time
emb = torch.nn.Embedding(1000, 16).cuda()
ids = torch.randint(0, 1000, (4096,), device="cuda")
emb(ids); torch.cuda.synchronize()
ok = 0
for i in range(30):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = emb(ids)
        time.sleep(0.02)  # two flush periods of edo inside each capture
    g.replay(); ok += 1
torch.cuda.synchronize()
print("captures_ok %d" % ok)
''',
    "visible": r'''
import os, torch
os.environ["CUDA_VISIBLE_DEVICES"] = ""
print("devices %d" % torch.cuda.device_count())
''',
    "launch": r'''
import time, torch
x = torch.zeros(1, device="cuda")
for _ in range(1000): x.add_(1)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(20000): x.add_(1)
torch.cuda.synchronize()
print("us_per_launch %.3f" % ((time.perf_counter() - t) / 20000 * 1e6))
''',
    "devmem": r'''
import torch
torch.cuda.init()
free0, _ = torch.cuda.mem_get_info()
big = torch.nn.Embedding(4_000_000, 4).cuda()
small = torch.nn.Embedding(1000, 4).cuda()
ids = torch.randint(0, 1000, (4096,), device="cuda")
for _ in range(50):
    big(ids); small(ids)
torch.cuda.synchronize()
free1, _ = torch.cuda.mem_get_info()
print("outside_torch_bytes %d" % (free0 - free1 - torch.cuda.memory_reserved()))
''',
    "compiled": r'''
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(5000, 32)
        self.lin = torch.nn.Linear(32, 1)
    def forward(self, ids):
        return self.lin(self.emb(ids)).sum()
m = M().cuda()
f = torch.compile(m, mode="reduce-overhead")
ids = torch.randint(0, 5000, (2048,), device="cuda")
for _ in range(20):
    y = f(ids)
torch.cuda.synchronize()
print("compiled_ok 1")
''',
    "fork": r'''
import os, threading, time, torch
emb = torch.nn.Embedding(1000, 16).cuda()
ids = torch.randint(0, 1000, (4096,), device="cuda")
emb(ids); torch.cuda.synchronize()
stop = False
def launcher():
    while not stop:
        emb(ids)
t = threading.Thread(target=launcher); t.start()
kids = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        sum(range(100000))  # host work only: CUDA cannot be used in a forked child
        os._exit(0)
    kids.append(pid)
deadline = time.time() + 60
hung = 0
for pid in kids:
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.time() > deadline:
            os.kill(pid, 9); os.waitpid(pid, 0); hung += 1
            break
        time.sleep(0.01)
stop = True; t.join(); torch.cuda.synchronize()
print("fork_hung %d" % hung)
''',
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    edo = os.path.join(a.build, "bin", "edo")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EDO_CHANNEL", "EDO_OUTPUT")}
    probe = subprocess.run([a.python, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"], env=env)
    if probe.returncode != 0:
        print("SKIP: no torch with a usable CUDA device")
        return 77
    tmp = tempfile.mkdtemp(prefix="edo_stack_facts_")
    ok = True

    def job(name, traced, extra_env=None):
        path = os.path.join(tmp, name + ".py")
        with open(path, "w") as f:
            f.write(JOBS[name])
        e = dict(env, **(extra_env or {}))
        db = os.path.join(tmp, "%s.edodb" % name)
        cmd = ([edo, "record", "--force", "-o", db, "--"] if traced else []) + [a.python, path]
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=300)
        vals = dict(l.split(" ", 1) for l in r.stdout.splitlines() if " " in l)
        return r, vals, db

    def fact(name, passed, detail):
        nonlocal ok
        ok &= bool(passed)
        print("FACT %s %s %s" % (name, "PASS" if passed else "FAIL", detail), flush=True)

    r0, v0, _ = job("graph", False)
    r1, v1, _ = job("graph", True, {"EDO_FLUSH_MS": "10"})
    fact("graph_capture", r0.returncode == 0 and r1.returncode == 0 and v0.get("sum") == v1.get("sum"),
         "plain exit %d sum %s; edo exit %d sum %s %s" % (r0.returncode, v0.get("sum"), r1.returncode, v1.get("sum"),
                                                          r1.stderr.strip().splitlines()[-1:] if r1.returncode else ""))
    r, v, _ = job("captures", True, {"EDO_FLUSH_MS": "10"})
    fact("global_captures", r.returncode == 0 and v.get("captures_ok") == "30",
         "exit %d, %s of 30 captures %s" % (r.returncode, v.get("captures_ok"), r.stderr.strip().splitlines()[-1:]))
    r0, v0, _ = job("visible", False)
    r1, v1, _ = job("visible", True)
    fact("visible_devices", v0.get("devices") == "0" and v1.get("devices") == "0",
         "devices after CUDA_VISIBLE_DEVICES='' post-import: plain %s, edo %s" % (v0.get("devices"), v1.get("devices")))
    _, v0, _ = job("launch", False)
    _, v1, _ = job("launch", True)
    try:
        p, t = float(v0["us_per_launch"]), float(v1["us_per_launch"])
        fact("launch_us", t - p < 1.0, "plain %.3f us, edo %.3f us, added %.3f us (ratio %.3f)" % (p, t, t - p, t / p))
    except (KeyError, ValueError):
        fact("launch_us", False, "no figures: plain %s, edo %s" % (v0, v1))
    r, v, db = job("devmem", True, {"EDO_MAX_DEVICE_MB": "16"})
    rep = json.loads(subprocess.run([edo, "report", "--json", db], capture_output=True, text=True).stdout or "{}") \
        if r.returncode == 0 else {}
    own = rep.get("memory", {}).get("edo_device_bytes", -1)
    bound = rep.get("drops", {}).get("device_memory_bound_tables", 0)
    lookups = sorted(t.get("lookups", 0) for t in rep.get("tables", []))
    fact("device_memory", r.returncode == 0 and 0 < own <= (16 << 20) and bound == 1 and lookups[-2:] == [204800, 204800],
         "exit %d, edo's device memory %s bytes (bound 16 MiB), device_memory_bound_tables %s, lookups %s, "
         "outside torch's reserved memory per cudaMemGetInfo %s bytes" % (r.returncode, own, bound, lookups,
                                                                         v.get("outside_torch_bytes")))
    r, v, db = job("compiled", True, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    rep = json.loads(subprocess.run([edo, "report", "--json", db], capture_output=True, text=True).stdout or "{}") \
        if r.returncode == 0 else {}
    tied = [(k["name"][:60], pt["table"], pt["launches"]) for k in rep.get("kernels", []) for pt in k.get("per_table", [])
            if pt["table"].endswith("emb")]
    fact("compiled_graphs", r.returncode == 0 and bool(tied),
         "exit %d, kernels tied to the embedding: %s" % (r.returncode, tied[:3]))
    r, v, _ = job("fork", True)
    fact("fork_workers", r.returncode == 0 and v.get("fork_hung") == "0",
         "exit %d, children hung %s of 8 %s" % (r.returncode, v.get("fork_hung"), r.stderr.strip().splitlines()[-1:]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
