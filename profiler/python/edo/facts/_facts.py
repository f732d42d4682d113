"""Facts about the job's training that the tuner checks its advice against, sent as notes:

``pytorch.optimizer``: per (table, optimizer) the optimizer's kind and the hyperparameters of
the param_group that holds the table's weight, when first seen and again when they change. A
learning rate that a scheduler moves every step is sent again only when it moved by more than
10 % from the value last sent (a note per step per table would cost more than it tells); a
learning rate held in a CUDA tensor is not read (that would synchronise) and is left out.

``pytorch.dense_use``: once per table, when its weight is seen read whole by something other
than its lookups (a tied LM head ``F.linear(x, emb.weight)``, a matmul, any op):
  * a module of the model other than an embedding holding the same weight Parameter
    (nn.Linear: a tied head; covers inference);
  * in the first ``CHECKS`` optimizer steps, a dense gradient with more non-zero rows than the
    ids the table's lookups read since its gradient was last looked at (then the counting
    stops: no steady-state cost; a job that never steps an optimizer stops after TALLY_CALLS
    lookups).
    The count of non-zero rows is computed on the table's device and read asynchronously.
Limits: a step whose lookups read as many ids as the table has rows cannot tell (skipped); a
dense read that leaves its gradient zero on the rows it did not look up (rare) is not seen;
sparse gradients (nn.Embedding(sparse=True)) cannot be read whole and are not checked; in
inference, only a module holding the weight is seen, not a functional read.
"""

import json
import math

from . import _loss
from ..runtime import _state
from ..runtime._state import R

CHECKS = 3
TALLY_CALLS = 100000
_HYPER = ("lr", "eps", "weight_decay", "momentum", "initial_accumulator_value")


def _number(v):
    """A hyperparameter as a float, or None (a CUDA tensor is not read: it would sync)."""
    t = R.torch
    if isinstance(v, t.Tensor):
        if v.device.type != "cpu" or v.numel() != 1:
            return None
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def hyperparameters(opt, group):
    """The pytorch.optimizer fields of one param_group (without the table)."""
    out = {"kind": type(opt).__name__.lower()}
    for k in _HYPER:
        v = _number(group.get(k, 0.0))
        if v is not None:
            out[k] = v
    betas = group.get("betas")
    if isinstance(betas, (tuple, list)) and len(betas) == 2:
        b = [_number(x) for x in betas]
        if None not in b:
            out["betas"] = b
    out["maximize"] = bool(group.get("maximize", False))
    return out


def _changed(old, new):
    if old is None:
        return True
    a, b = dict(old), dict(new)
    la, lb = a.pop("lr", None), b.pop("lr", None)
    if a != b or (la is None) != (lb is None):
        return True
    if la is None or la == lb:
        return False
    return abs(lb - la) > 0.1 * max(abs(la), abs(lb))


def optimizer_notes(opt, params):
    """params: [(param, owner table, param_group)] of this optimizer that are tables."""
    s = _state.S
    seen = set()
    for p, tab, group in params:
        key = (tab.name, id(opt))
        if key in seen:
            continue
        seen.add(key)
        h = hyperparameters(opt, group)
        if not _changed(s.opt_sent.get(key), h):
            continue
        s.opt_sent[key] = h
        doc = {"table": tab.name}
        doc.update(h)
        _state.backend().note("pytorch.optimizer", json.dumps(doc, sort_keys=True))


# ---- dense use ---------------------------------------------------------------------------

def watching():
    return _state.S.dense_checks_left > 0


def send_dense(tab_name, why):
    s = _state.S
    if tab_name in s.dense_sent:
        return
    s.dense_sent.add(tab_name)
    _state.backend().note("pytorch.dense_use", json.dumps({"table": tab_name, "why": why}, sort_keys=True))


def check_gradients(params):
    """After an optimizer step (one of the first CHECKS): compares each table's gradient with the
    ids its lookups read in the step."""
    s = _state.S
    if s.dense_checks_left <= 0:
        return
    torch = R.torch
    checked = False
    done = set()
    for p, tab, _group in params:
        if tab.name in done or tab.name in s.dense_sent:
            continue
        done.add(tab.name)
        g = p.grad
        if g is None or g.is_sparse or g.dim() != 2:
            continue
        # The ids read since this table's gradient was last looked at: the lookups that made
        # this gradient, whichever optimizer (one of several) marked the step in between.
        ids = s.ids_this_step.pop(tab.name, 0)
        rows = int(g.shape[0])
        checked = True
        if ids >= rows:
            continue   # lookups alone could have reached every row: the counts cannot tell
        with torch.no_grad():
            nonzero = (g != 0).any(dim=1).sum()

        def verdict(n, name=tab.name, ids=ids, rows=rows):
            n = int(n)
            if n > ids:
                send_dense(name, "the gradient reached %d of %d rows in a step whose lookups read %d ids"
                           % (n, rows, ids))
        _loss.ensure_exit()
        _loss.read_later(nonzero, verdict)
    if checked:
        s.dense_checks_left -= 1
        if s.dense_checks_left <= 0:
            s.ids_this_step.clear()


def tally(tab_name, n):
    """A lookup of ``n`` ids of a table (its owner's name), while the first steps are watched.
    A job that never steps an optimizer (serving) stops being watched after TALLY_CALLS lookups."""
    s = _state.S
    s.ids_this_step[tab_name] += n
    s.tally_calls += 1
    if s.tally_calls >= TALLY_CALLS:
        s.dense_checks_left = 0
        s.ids_this_step.clear()
