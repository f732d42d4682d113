#!/usr/bin/env python3
"""Where percall.py's figure goes, without the tracer: edo's Python path alone, piece by piece.

Runs in one process with a stand-in backend whose table_lookup does nothing (no ctypes, no
tracer), so only Python and torch are timed: one EmbeddingBag forward of 768 ids (the job
thread's CPU time per call, the best of 7 blocks) plain, then with a no-op pre-hook (torch's
own cost of calling any hook), with edo's hook alone, with edo's functional wrapper alone, and
with both; and a direct call of edo's hook. Run it with a python that has torch, against a
package directory (to compare two versions of edo's hooks on the same machine and load):

    percall_parts.py [--package profiler/python] [--calls N]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class NoopBackend(object):
    available = True

    def table_register(self, *a):
        return 0

    def table_lookup(self, *a):
        return 0

    def table_set_extra_bytes(self, *a):
        return 0

    def step(self):
        return 0

    def note(self, *a):
        return 0

    def strerror(self, code):
        return "error %d" % code


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default=os.path.join(HERE, "..", "..", "profiler", "python"))
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.package))
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import edo
    from edo.hooks import _torch_hooks as H
    torch.set_num_threads(1)
    H.patch()
    H.set_backend(NoopBackend())
    m = nn.EmbeddingBag(100000, 64, mode="sum")
    edo.instrument(m)
    ids = torch.randint(0, 100000, (768,))
    offsets = torch.arange(0, 768, 24)

    def best(f):
        for _ in range(200):
            f()
        out = []
        for _ in range(7):
            t = time.thread_time()
            for _ in range(a.calls):
                f()
            out.append((time.thread_time() - t) / a.calls * 1e6)
        return min(out)

    hooks = dict(m._forward_pre_hooks)
    attr = m.__dict__.get("_edo_hook")   # edo's hook when its class's patched forward calls it
    forward = type(m).__dict__["forward"]
    wrapped = F.embedding_bag
    original = wrapped._edo_original

    def setup(hook, wrapper, extra=None):
        m._forward_pre_hooks.clear()
        if hook:
            m._forward_pre_hooks.update(hooks)
        if attr is not None:
            m.__dict__["_edo_hook"] = attr if hook else None
            type(m).forward = forward if hook else forward._edo_original
        if extra is not None:
            m.register_forward_pre_hook(extra)
        F.embedding_bag = wrapped if wrapper else original

    fwd = lambda: m(ids, offsets)   # noqa: E731
    with torch.no_grad():
        setup(False, False)
        plain = best(fwd)
        setup(False, False, lambda mod, args: None)
        noop = best(fwd) - plain
        setup(True, False)
        hook = best(fwd) - plain
        setup(False, True)
        wrapper = best(fwd) - plain
        setup(True, True)
        both = best(fwd) - plain
        h = attr if attr is not None else list(hooks.values())[0]
        direct = best(lambda: h(m, (ids, offsets)))
    print("torch %s, edo package %s: plain %.2f us; added by a no-op hook %.2f, edo's hook %.2f, "
          "edo's functional wrapper alone (it counts then) %.2f, both (edo as installed) %.2f; "
          "edo's hook called directly %.2f us"
          % (torch.__version__, os.path.abspath(a.package), plain, noop, hook, wrapper, both, direct))
    return 0


if __name__ == "__main__":
    sys.exit(main())
