"""LLM embeddings seen whole: the token table's output head, and each table's activation memory.

Both travel as notes, one key per table (kept as metadata, like ``torchrec.table.NAME``); a later
note under the same key replaces the earlier one, so each note carries the whole fact.

``pytorch.lm_head.TABLE``: the token table's output twin. An ``nn.Linear`` of the same model whose
weight is rows x dim of an embedding table (out_features = vocabulary, in_features = dim) is the
table's untied head; one holding the table's own weight is its tied head (also a tie and a
``pytorch.dense_use``, _naming.register_tree). Fields: head (module name), tied, rows, dim, dtype,
weight_bytes (0 when tied: counted in the table), grad_bytes and optimizer_bytes (the untied
head's, read from the optimizers at each step like a table's; 0 when tied), optimizer_state
({"adam.exp_avg": bytes, ...}), dense_reads_per_step (the head's forward calls in the step that
had the most; each reads every row) and dense_read_bytes_per_step (that x rows x dim x element).
When several embedding tables have the head's shape, the one registered first is its table.

``pytorch.activation.TABLE``: the memory a table's lookups produce in one step: the output of
every call (nn.Embedding: ids.shape + (dim,); nn.EmbeddingBag: bags x dim; F.embedding and
F.embedding_bag alike) in the weight's dtype, and its gradient (the same bytes, when the call
ran with autograd on and the weight requires a gradient), summed over the step's calls. The
note carries the step with the most (output_bytes, grad_bytes, peak_bytes = both, calls, the
last output shape, dtype), sent when a step beats the one sent before (first step, longer
sequences) and at exit for a job that marks no step. Counted in eager mode, from the ids'
shape the hooks already hold (what the output's shape is by definition); calls traced by
torch.compile are not counted.
"""

import atexit
import json
import os
import weakref

from ..runtime import _state
from ..runtime import _tables
from ..runtime._state import R

HEAD_PREFIX = "pytorch.lm_head."
ACT_PREFIX = "pytorch.activation."


class Head(object):
    """An LM head found for a token table."""
    __slots__ = ("name", "table", "tied", "weight_ref", "calls", "max_calls", "grad_bytes",
                 "opt_state", "sent")

    def __init__(self, name, table, tied, weight):
        self.name = name
        self.table = table            # the token table's name
        self.tied = tied
        self.weight_ref = weakref.ref(weight)
        self.calls = 0                # forward calls in the current step
        self.max_calls = 0            # the most in one step so far
        self.grad_bytes = 0
        self.opt_state = {}           # "adam.exp_avg" -> bytes
        self.sent = None


def _elem(w):
    try:
        return int(w.element_size())
    except Exception:
        return 0


def _send_head(h):
    w = h.weight_ref()
    if w is None:
        return
    rows, dim = int(w.shape[0]), int(w.shape[1])
    code = _tables.dtype_code(w.dtype)
    elem = _elem(w)
    full = rows * dim * elem
    doc = {"head": h.name, "tied": h.tied, "rows": rows, "dim": dim,
           "dtype": code[0] if code else str(w.dtype),
           "weight_bytes": 0 if h.tied else full,
           "grad_bytes": 0 if h.tied else h.grad_bytes,
           "optimizer_bytes": 0 if h.tied else sum(h.opt_state.values()),
           "optimizer_state": {} if h.tied else dict(h.opt_state),
           "dense_reads_per_step": h.max_calls,
           "dense_read_bytes_per_step": h.max_calls * full}
    text = json.dumps(doc, sort_keys=True)
    if text != h.sent:
        h.sent = text
        _state.backend().note(HEAD_PREFIX + h.table, text)


def _global_head_hook(module, _args):
    """One global forward pre-hook for every head (torch's register_module_forward_pre_hook):
    a hook on the head module itself would be pickled with it (torch.save of the model would
    then need edo) and seen by torch.jit.script. It is installed only once a head is found; it
    costs a dictionary lookup per module call."""
    if not R.enabled:
        return None
    compiling = R.compiling
    if compiling is not None and compiling():
        return None   # traced: not counted (see the module's doc)
    hh = _state.S.head_modules.get(id(module))
    if hh is None or hh[0]() is not module:
        return None
    hh[1].calls += 1
    _state.S.dirty = True   # a step with only the head's forward is still a step
    return None


def _install_count_hook(module, h):
    _state.S.head_modules[id(module)] = (weakref.ref(module), h)
    if R.head_hook is None:
        R.head_hook = R.torch.nn.modules.module.register_module_forward_pre_hook(_global_head_hook)


def recognise(others, emb_tables):
    """others: [(path, module)] of the model's non-embedding modules; emb_tables: the model's
    token-table candidates, [Table] in registration order. Finds untied and tied LM heads."""
    s = _state.S
    Linear = R.torch.nn.Linear
    for path, m in others:
        if not path or not isinstance(m, Linear):
            continue
        w = m._parameters.get("weight")
        if w is None or w.dim() != 2 or id(m) in s.head_ids:
            continue
        table = None
        tied = False
        for tab in emb_tables:
            tw = tab.weight_ref()
            if tw is None:
                continue
            if tw is w or tab.base == _safe_ptr(w):
                table, tied = tab, True
                break
        if table is None:
            for tab in emb_tables:
                if tab.tied_to is None and (tab.rows, tab.dim) == (int(w.shape[0]), int(w.shape[1])):
                    table = tab
                    break
        if table is None or table.name in s.heads:
            continue
        owner = _tables.owner_of(table)
        h = Head(path, owner.name, tied, w)
        s.heads[owner.name] = h
        s.head_ids.add(id(m))
        if not tied:
            s.head_weights[id(w)] = h
        _install_count_hook(m, h)
        s.generation += 1   # optimizers re-read their params: the head's weight is one now
        _send_head(h)
        ensure_exit()


def _safe_ptr(w):
    try:
        return w.data_ptr()
    except Exception:
        return 0


def head_for_weight(p):
    """The untied head whose weight is ``p``, or None."""
    h = _state.S.head_weights.get(id(p))
    if h is None or h.weight_ref() is not p:
        return None
    return h


def head_state(h, opt_prefix, state, grad):
    """After an optimizer step: the head's gradient and optimizer state bytes."""
    t = R.torch
    if state:
        for k, v in state.items():
            if isinstance(v, t.Tensor) and v.numel() > 1:
                h.opt_state["%s.%s" % (opt_prefix, k)] = _tables.tensor_bytes(v)
    if grad is not None:
        h.grad_bytes = _tables.tensor_bytes(grad)
    _send_head(h)


# ---- activations ------------------------------------------------------------------------

def account(tab, idx, weight, bags=None, n=None):
    """One lookup call of ``tab`` (the table counted): its output bytes (and its gradient's).
    ``bags``: an EmbeddingBag's bag count (None for nn.Embedding: one output row per id);
    ``n``: ``idx.numel()`` when the caller has it already.
    On every eager lookup: kept to a few attribute reads (the shape is kept as torch gives it
    and turned into a list only when a note is sent)."""
    a = _state.S.act_step.get(tab.name)
    if a is None:
        a = act_entry(tab, weight)
    if bags is None:
        out = (idx.numel() if n is None else n) * a[5]
        a[3] = idx.shape
    else:
        out = bags * a[5]
        a[3] = bags
    a[0] += out
    if weight.requires_grad and R.torch.is_grad_enabled():
        a[1] += out
    a[2] += 1


def act_entry(tab, weight):
    """The table's activation entry: [output bytes, gradient bytes, calls, last shape (an int:
    shape [int, dim]), table, bytes of one output row]. Kept for the life of the state and zeroed
    at each step (end_step), so _fastcount's C side can hold it."""
    s = _state.S
    a = s.act_step.get(tab.name)
    if a is None:
        a = s.act_step[tab.name] = [0, 0, 0, None, tab, tab.dim * _elem(weight)]
        ensure_exit()
    return a


def _shape_list(a):
    tab = a[4]
    if a[3] is None:
        return []
    if isinstance(a[3], int):
        return [a[3], tab.dim]
    return [int(x) for x in a[3]] + [tab.dim]


def bags_of(module, idx, offsets):
    """The bag count of an EmbeddingBag call: 2-D ids are one bag per row; 1-D ids with
    offsets one bag per offset (less the last with include_last_offset)."""
    if idx.dim() == 2:
        return int(idx.shape[0])
    if offsets is None or not isinstance(offsets, R.torch.Tensor):
        return 0
    n = int(offsets.numel())
    if module is not None and getattr(module, "include_last_offset", False):
        n -= 1
    return max(n, 0)


def end_step():
    """At each step mark: the step's activation bytes and head reads, sent when a new peak."""
    s = _state.S
    if s.act_step:
        for name, a in s.act_step.items():
            if not a[2]:
                continue   # no call this step
            total = a[0] + a[1]
            prev = s.act_peak.get(name)
            if prev is None or total > prev:
                s.act_peak[name] = total
                tab = a[4]
                doc = {"output_bytes": a[0], "grad_bytes": a[1], "peak_bytes": total, "calls": a[2],
                       "shape": _shape_list(a), "dtype": tab.dtype}
                _state.backend().note(ACT_PREFIX + name, json.dumps(doc, sort_keys=True))
            a[0:4] = [0, 0, 0, None]
    for h in s.heads.values():
        if h.calls > h.max_calls:
            h.max_calls = h.calls
            _send_head(h)
        h.calls = 0


_exit_registered = []


def _at_exit():
    try:
        if R.enabled and R.backend is not None:
            end_step()
    except Exception as e:
        _state.internal_error("activation notes at exit", e)


def ensure_exit():
    """The last step's figures are sent at exit (a job that marks no step: serving, eval)."""
    if _exit_registered:
        return
    _exit_registered.append(os.getpid())
    atexit.register(_at_exit)   # a forked child inherits it and sends its own state
