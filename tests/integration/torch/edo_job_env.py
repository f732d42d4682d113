"""What the PyTorch end-to-end drivers share: their command line (--build, --source), the skip
when edo or torch is missing (ctest's SKIP_RETURN_CODE 77), a job environment without a
preload of its own, and a command runner that stops the test with the command's output."""

import argparse
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def skip(why):
    print("skipped: " + why)
    sys.exit(SKIP)


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        sys.stderr.write("FAILED (%d): %s\n%s\n%s\n" % (r.returncode, " ".join(cmd), r.stdout[-3000:], r.stderr[-3000:]))
        sys.exit(1)
    return r


def setup():
    """(build, source, edo_bin, python, env) from the command line; skips without edo or torch."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.join(HERE, "..", "..", ".."))
    a = ap.parse_args()
    build, source = os.path.abspath(a.build), os.path.abspath(a.source)
    edo_bin = os.path.join(build, "bin", "edo")
    if not os.path.exists(edo_bin) or not os.path.exists(os.path.join(build, "lib", "libedo_trace.so")):
        skip("edo or libedo_trace.so not built in %s" % build)
    py = os.environ.get("EDO_TEST_PYTHON") or "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        skip("no torch in %s (set EDO_TEST_PYTHON)" % py)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "EDO_OUTPUT", "PYTHONPATH", "EDO_TORCH")}
    env.setdefault("OMP_NUM_THREADS", "2")
    return build, source, edo_bin, py, env


def lru_miss_rate(stream, cut, k):
    """Misses / lookups of stream[cut:] through an exact LRU of k rows warm from stream[:cut]."""
    from collections import OrderedDict
    cache, misses = OrderedDict(), 0
    for i, x in enumerate(stream):
        if x in cache:
            cache.move_to_end(x)
        else:
            misses += i >= cut
            cache[x] = True
            if len(cache) > k:
                cache.popitem(last=False)
    return misses / max(1, len(stream) - cut)
