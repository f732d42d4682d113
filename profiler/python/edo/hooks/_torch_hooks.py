"""PyTorch auto-instrumentation: registers embedding tables and counts their lookups.

The work is split by job, each in its own module:
  _state     the mutable state: ``R`` (what patch() installed) and ``S`` (what was learnt
             about the job, replaced whole by reset_state())
  _naming    discovery of models and tables, and ``table_name()``: the one place where a
             table's name is decided (the naming rule is documented there)
  _tables    registration with the tracer, ties, lookup by data pointer
  _counting  eager counting: a call's ids handed to the tracer, its activation accounted
  _calls     edo.register_table and edo.lookup once torch is patched (also plan/_apply's)
  _wrappers  the hooks that call it: the patched forward, pre-hooks, functional wrappers
  _compiled  edo's operator, counting inside graphs of torch.compile / torch.export
  _devices   the current CUDA stream of a tensor's device
  _optim     optimizer state bytes and step marks
  _weights   weight snapshots (edo record --weights)
  _loss      each step's loss (pytorch.loss notes), device values read without a sync
  _facts     the optimizers' hyperparameters and dense use of tables (pytorch.* notes)
  _family    a token table's LM head (tied or untied) and each table's activation bytes per
             step (pytorch.lm_head.* / pytorch.activation.* notes)
  _trial     edo record --apply-plan: the plan applied at the first forward
  _lowp      fp16/bf16 training tables: fp32 optimizer state, stochastic rounding (apply_plan)
  _patches   what is patched in torch, patch() and unpatch()
This module is the entry point the package and the boot hook use. Imports point one way,
down this list's dependency order (_state and _native at the bottom, this module at the top;
tests/integration/torch/test_import_layers.py fails on a circle).

Nothing here may raise into the job or change what it computes: every hook catches its
own exceptions (one warning, then carries on).
"""

import collections
import weakref

from . import _calls
from . import _naming
from ..runtime import _state
from ..runtime import _tables
from . import _wrappers
from ._counting import EdoPreHook, count  # noqa: F401  (isinstance checks)
from ._wrappers import hook_of  # noqa: F401
from ._optim import user_step  # noqa: F401
from ._patches import patch, unpatch  # noqa: F401
from ..runtime._state import R, backend, env_disabled  # noqa: F401
from ..facts._weights import snapshot_weights  # noqa: F401


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


def instrument(model, prefix=""):
    """Registers every embedding of ``model`` (named relative to it, with ``prefix.``
    in front when given) and makes sure its lookups are counted. Returns ``model``."""
    if not R.enabled:
        return model
    if R.torch is None:
        import torch  # noqa: F401  (the caller has torch: it passes a model)
        del torch
        patch()
    if not R.patched:
        return model
    try:
        s = _state.S
        with R.lock:
            root = _naming.unwrap(model)
            if not any(ref() is root for ref, _ in s.explicit_roots):
                s.explicit_roots.insert(0, (weakref.ref(root), prefix or ""))
            # modules created before edo was patched have no hook yet
            for _, m in _naming.walk(root, ""):
                if isinstance(m, R.emb_classes):
                    _wrappers.install_hook(m)
            if isinstance(root, R.emb_classes):
                name = prefix or _naming.table_name(root)
                w = _tables.weight_of(root)
                tab = _tables.register_weight(name, w, root)
                if tab is not None:
                    _naming.bind(root, w, tab)
            else:
                _naming.register_tree(root, prefix or "")
    except Exception as e:  # never break the caller
        _state.internal_error("instrument", e)
    return model


def register_table(name, weight):
    """edo.register_table: a 2-D tensor registered as table ``name``; the Table or None."""
    if R.torch is None:
        import torch  # noqa: F401
        del torch
        patch()
    return _calls.register_table(name, weight)


def lookup(table, indices):
    """edo.lookup: counts one batch of row ids read from a registered table (or its name)."""
    _calls.lookup(table, indices)


def tables():
    """The tables registered so far: name -> dict (rows, dim, dtype, device, tied_to)."""
    with R.lock:
        return collections.OrderedDict((n, t.as_dict()) for n, t in _state.S.tables.items())
