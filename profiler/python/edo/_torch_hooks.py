"""PyTorch auto-instrumentation: registers embedding tables and counts their lookups.

The work is split by job, each in its own module:
  _state     the mutable state: ``R`` (what patch() installed) and ``S`` (what was learnt
             about the job, replaced whole by reset_state())
  _naming    discovery of models and tables, and ``table_name()``: the one place where a
             table's name is decided (the naming rule is documented there)
  _tables    registration with the tracer, ties, lookup by data pointer
  _counting  the forward pre-hook and the functional wrappers
  _optim     optimizer state bytes and step marks
  _weights   weight snapshots (edo record --weights)
  _loss      each step's loss (pytorch.loss notes), device values read without a sync
  _facts     the optimizers' hyperparameters and dense use of tables (pytorch.* notes)
  _family    a token table's LM head (tied or untied) and each table's activation bytes per
             step (pytorch.lm_head.* / pytorch.activation.* notes)
  _trial     edo record --apply-plan: the plan applied at the first forward
  _lowp      fp16/bf16 training tables: fp32 optimizer state, stochastic rounding (apply_plan)
  _patches   what is patched in torch, patch() and unpatch()
This module is the entry point the package and the boot hook use.

Nothing here may raise into the job or change what it computes: every hook catches its
own exceptions (one warning, then carries on).
"""

import collections

from . import _state
from ._counting import EdoPreHook, count, hook_of  # noqa: F401  (isinstance checks; edo.lookup)
from ._naming import instrument  # noqa: F401
from ._optim import user_step  # noqa: F401
from ._patches import patch, unpatch  # noqa: F401
from ._state import R, backend, env_disabled  # noqa: F401
from ._weights import snapshot_weights  # noqa: F401


def set_backend(b):
    """Replaces the native binding (tests pass a fake with the same methods)."""
    R.backend = b


def reset_state():
    """Forgets every table, root and name (tests): the whole state object is replaced."""
    _state.reset()


def set_enabled(on):
    R.enabled = bool(on)


def enabled():
    return R.enabled and not env_disabled()


def patched():
    return R.patched


def register_table(name, weight):
    """edo.register_table: a 2-D tensor registered as table ``name``; the Table or None."""
    from . import _tables, _weights
    if R.torch is None:
        import torch  # noqa: F401
        del torch
        patch()
    if not R.patched:
        return None
    try:
        with R.lock:
            tab = _tables.register_weight(name, weight)
        if tab is not None and _weights.wanted():
            _weights.ensure_exit_hooks()
        return tab
    except Exception as e:
        _state.internal_error("register_table", e)
        return None


def lookup(table, indices):
    """edo.lookup: counts one batch of row ids read from a registered table (or its name)."""
    if not R.enabled or table is None:
        return
    try:
        if isinstance(table, str):
            table = _state.S.tables.get(table)
            if table is None:
                return
        compiling = R.compiling
        if R.op is not None and compiling is not None and compiling():
            # Traced by torch.compile / torch.export: the operator goes into the graph.
            from . import _compiled
            if isinstance(indices, R.torch.Tensor) and table.key >= 0:
                R.op(indices, None, _compiled.table_key(table))
            return
        if R.backend is None:
            backend()
        count(table, indices)
    except Exception as e:
        _state.internal_error("lookup", e)


def tables():
    """The tables registered so far: name -> dict (rows, dim, dtype, device, tied_to)."""
    with R.lock:
        return collections.OrderedDict((n, t.as_dict()) for n, t in _state.S.tables.items())
