"""``edo record --apply-plan PLAN``: the plan applied inside the job, with no code change.

``edo record`` passes the plan's absolute path as EDO_APPLY_PLAN. When torch is imported, the
optimizers' steps are hooked for low-precision training (``_lowp.install``: before any optimizer
or learning-rate scheduler exists) and a global forward pre-hook waits for the first forward of
any module (or ``torch.compile(module)``, whichever comes first). By then the job has built its
model (it is running or compiling it) and, usually, its optimizer, but no optimizer has stepped: every live model that holds embedding tables (the roots found by
the same scan that names tables) gets ``edo.apply_plan(root, PLAN)``, once, before its first
lookup. Tables are named as the recording names them, so the converted tables are registered
under the same names and the trial recording measures their new bytes. The hook then removes
itself (no cost afterwards).

What the job sees: its tables converted in place (the same Parameter objects for fp16/bf16), one
line on stderr, and a ``pytorch.plan_applied`` note for ``edo diff --plan``. A plan that cannot be
read or is not valid changes nothing (one line says why; the job runs as it would).
Limits: models built after that first forward are not converted; a model already wrapped in
DistributedDataParallel is left as it was (DDP laid out its gradient buckets for the old dtype:
call ``edo.apply_plan`` before wrapping); a table in no model (named by class and shape) is left.
"""

import json
import os
import sys

from ..plan import _lowp
from . import _naming
from ..plan import _plan_file
from ..runtime import _state
from ..runtime._state import R

_done = []
_handle = []
_installed_pid = []
# Wrappers that laid out the model's parameters for their own use (gradient buckets, flat
# parameters) when they were built: a dtype changed under them would break the job.
_SHARDING_WRAPPERS = ("DistributedDataParallel", "FullyShardedDataParallel")


def plan_path():
    p = os.environ.get("EDO_APPLY_PLAN", "").strip()
    return p or None


def install(torch):
    """At patch(): hooks for a plan to apply, when edo record was given one."""
    if plan_path() is None or _handle:
        return
    _lowp.install()
    reg = getattr(torch.nn.modules.module, "register_module_forward_pre_hook", None)
    if reg is None:
        _state.warn("apply-plan", "this torch has no global forward pre-hook: --apply-plan is not applied")
        return
    # A first forward inside a torch.compile'd function: the hook runs eagerly (a graph break).
    _handle.append(reg(_lowp.eager(_first_forward)))
    _installed_pid.append(os.getpid())
    import atexit
    atexit.register(_not_applied)


def before_compile(obj):
    """torch.compile(module): the model is built, it is applied now (before the compiled module's
    first call, which would also warn about a global module hook)."""
    if _handle and not _done and isinstance(obj, R.torch.nn.Module):
        _first_forward(obj, ())


def _say(line):
    try:
        sys.stderr.write("edo: %s\n" % line)
        sys.stderr.flush()
    except Exception:
        pass


def _first_forward(module, args):
    # Two threads' first forwards: one applies, the other waits until it is done.
    with R.lock:
        if _done:
            return None
        _done.append(True)
        try:
            _handle.pop().remove()
        except Exception:
            pass
        try:
            apply_now(plan_path())
        except Exception as e:
            _state.internal_error("applying the plan", e)
    return None


def _not_applied():
    # Only the process that installed the hook speaks (a forked child leaving through exit()
    # ran no model of its own).
    if not _done and R.enabled and _installed_pid and _installed_pid[0] == os.getpid():
        _say("plan %s was not applied: the job ran no forward pass of a model" % plan_path())


def _roots():
    """(root, wrapper name or None) for every live model with embedding tables."""
    out = []
    for r in _naming.gc_roots():
        inner = _naming.unwrap(r)
        if isinstance(inner, R.emb_classes):
            continue
        if not any(isinstance(m, R.emb_classes) for _, m in _naming.walk(inner, "")):
            continue
        wrapper = type(r).__name__ if inner is not r and type(r).__name__ in _SHARDING_WRAPPERS else None
        out.append((inner, wrapper))
    return out


def _merge(results, res):
    """Keeps, per plan table, the answer of the root that has it (applied first)."""
    for name, e in res.items():
        old = results.get(name)
        if old is None or (not old["applied"] and (e["applied"] or "has no embedding table" in old["why"])):
            results[name] = e


def apply_now(path):
    """Applies the plan at ``path`` to every live model; sends pytorch.plan_applied; one line."""
    from ..plan import _apply   # only with a plan to apply: not read at every job's start
    torch = R.torch
    if path is None:
        return None
    results = {}
    try:
        plan = _plan_file.load_plan(path)   # a bad plan: one line, nothing changed
        with torch.inference_mode(False) if hasattr(torch, "inference_mode") else _Null():
            for root, wrapper in _roots():
                if wrapper is not None:
                    for name in _names_in(root):
                        results.setdefault(name, dict(strategy="", before_bytes=0, after_bytes=0, applied=False,
                                                      why="left as it was: the model is already wrapped in %s "
                                                          "(apply the plan before wrapping it)" % wrapper, optimizer=""))
                    continue
                _merge(results, _apply.apply_plan(root, path))
    except _plan_file.PlanError as e:
        _say("cannot apply plan %s: %s; the job runs with its model unchanged" % (path, e))
        return None
    for e in results.values():
        # A trial run changes no code: the job's own optimizer trains every table, so a table the
        # plan moves to row-wise Adagrad holds the job's optimizer state, not the plan's. It is
        # not judged on its bytes (edo diff --plan lists it as not applied, with this reason).
        if e.get("optimizer") == "rowwise_adagrad" and e.get("applied"):
            e["applied"] = False
            done = e.get("why", "").split("; the plan's bytes assume row-wise Adagrad")[0]
            e["why"] = ("%s; not applied: the plan moves it to row-wise Adagrad, which a run without a code change "
                        "cannot do (the job's optimizer trains it): train it with edo.RowwiseAdagrad" % done)
    for t in plan:
        results.setdefault(t["name"], dict(
            strategy=t.get("strategy", "unchanged"), before_bytes=0, after_bytes=0, applied=False, optimizer="",
            why="no model holding this table was alive at the first forward (nothing converted)"))
    tables = {n: {k: e[k] for k in ("strategy", "applied", "why", "before_bytes", "after_bytes")}
              for n, e in results.items()}
    _state.backend().note("pytorch.plan_applied", json.dumps({"plan": path, "tables": tables}, sort_keys=True))
    _say(summary(path, results))
    return results


def _names_in(root):
    return [n for n, m in _naming.walk(root, "") if n and isinstance(m, R.emb_classes)]


def summary(path, results):
    """``applied plan P: 3 of 4 tables converted (name: why; ...)``"""
    changing = {n: e for n, e in results.items()
                if e["strategy"] not in ("unchanged", "fp32", "shared") or e.get("optimizer") in (
                    "rowwise_adagrad", "sparse_adam", "sparse_adagrad", "frozen", "tie_head", "trim_vocab")}
    done = [n for n, e in changing.items() if e["applied"]]
    left = ["%s: %s" % (n, e["why"]) for n, e in changing.items() if not e["applied"]]
    line = "applied plan %s: %d of %d tables converted" % (path, len(done), len(changing))
    if left:
        line += " (%s)" % "; ".join(left)
    return line


class _Null(object):
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False
