"""edo: embedding memory profiler — the PyTorch side.

Under ``edo record -- python train.py`` nothing has to be imported: the sitecustomize hook
that ``edo record`` puts on PYTHONPATH patches torch when the job imports it, and every
``torch.nn.Embedding`` / ``torch.nn.EmbeddingBag`` is registered and counted. By hand::

    import edo
    edo.instrument(model)      # register model's tables now, named relative to model
    ...
    edo.step()                 # mark a step (otherwise: one per optimizer.step())

Without libedo_trace.so in the process every call is a no-op (one warning). ``EDO_TORCH=0``
turns the PyTorch hooks off. Nothing here changes what the job computes.
"""

import os as _os
import sys as _sys

from .runtime import _native  # noqa: F401  (edo.runtime._native: the ctypes binding)
from .plan._plan_file import PlanError  # noqa: F401

__all__ = ["instrument", "step", "register_table", "lookup", "tables", "available",
           "enabled", "disable", "enable", "snapshot_weights", "apply_plan", "load_plan",
           "RowwiseAdagrad", "PlanError"]
__version__ = "0.1.0"


def _hooks():
    from .hooks import _torch_hooks
    return _torch_hooks


def enabled():
    """False when EDO_TORCH=0 or after edo.disable()."""
    return _hooks().enabled()


def available():
    """True when libedo_trace.so is loaded (calls reach the tracer)."""
    return bool(getattr(_hooks().backend(), "available", False))


def instrument(model, prefix=""):
    """Registers every embedding table of ``model`` (qualified names relative to it,
    ``prefix.`` in front when given) and counts their lookups. Returns ``model``."""
    if _hooks().env_disabled():
        return model
    return _hooks().instrument(model, prefix)


def step():
    """Marks one training / serving step. Once called, steps are no longer marked
    automatically from optimizer.step()."""
    if _hooks().env_disabled():
        return 0
    return _hooks().user_step()


def register_table(name, weight):
    """Registers a 2-D tensor (any storage the job reads rows of) as table ``name``.
    Returns a handle for ``lookup`` or None when it cannot be registered."""
    if _hooks().env_disabled():
        return None
    return _hooks().register_table(name, weight)


def lookup(table, indices):
    """Counts one batch of row ids (an int32/int64 tensor, CPU or CUDA) read from a table
    returned by ``register_table`` (or its name)."""
    if _hooks().env_disabled():
        return
    _hooks().lookup(table, indices)


def snapshot_weights():
    """Hands every registered table's weights to the tracer for a weight snapshot (kept only
    under ``edo record --weights`` / EDO_WEIGHTS=1, which also takes one when a table's module
    is released and at exit). Returns the number of tables handed over."""
    if _hooks().env_disabled():
        return 0
    return _hooks().snapshot_weights()


def apply_plan(model, plan, training=None, rows_read=None, prefix="", optimizer=None, allow_tying=False,
               vocab_remap=None):
    """Converts each table of ``model`` that ``plan`` (a JSON/YAML plan file, an .edodb with a
    plan, or an edo.plan/1 dict) names to the plan's choice, in place. Returns {table:
    {"strategy", "before_bytes", "after_bytes", "applied", "why", "optimizer"}}. The whole plan is
    validated first: edo.PlanError (one line) changes nothing. fp16/bf16 training tables keep fp32
    optimizer state, updated by stochastic rounding. See edo/_apply.py and docs/tuning.md
    ("Applying a plan"). ``optimizer``: the job's optimizer, for a table the plan moves to a sparse
    gradient under SparseAdam (edo/_levers.py); ``allow_tying``: the model agrees to have its
    untied LM head tied to its token table where the plan says so; ``vocab_remap``: the
    ``edo export --format vocab-remap`` file of a token table the plan trims (edo/_vocab_trim.py)."""
    from .plan._apply import apply_plan as _apply_plan
    return _apply_plan(model, plan, training=training, rows_read=rows_read, prefix=prefix, optimizer=optimizer,
                       allow_tying=allow_tying, vocab_remap=vocab_remap)


def load_plan(plan):
    """The tables of a plan (a list of dicts with the plan JSON's table keys)."""
    from .plan._plan_file import load_plan as _load
    return _load(plan)


def RowwiseAdagrad(params, lr=0.01, eps=1e-8, weight_decay=0.0):
    """Row-wise Adagrad for embedding tables (FBGEMM's EXACT_ROWWISE_ADAGRAD): one fp32
    accumulator per row. What a plan's "optimizer": "rowwise_adagrad" assumes."""
    from .plan._apply import RowwiseAdagrad as _R
    return _R(params, lr=lr, eps=eps, weight_decay=weight_decay)


def tables():
    """The tables registered in this process so far (name -> description)."""
    return _hooks().tables()


def disable():
    _hooks().set_enabled(False)


def enable():
    _hooks().set_enabled(True)


# Imported after torch (e.g. `import torch; import edo`): patch now, so modules created
# from here on are hooked. Imported before torch without the boot hook: patch lazily.
if "torch" in _sys.modules and _os.environ.get("EDO_TORCH", "1") != "0":
    try:
        _hooks().patch()
    except Exception:  # pragma: no cover - never break an import
        pass
