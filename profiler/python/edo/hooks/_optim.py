"""Optimizer state and steps: the bytes an optimizer keeps per table (Adam moments, Adagrad sums,
momentum buffers) and the gradients, recorded with ``edo_table_set_extra_bytes``; one step
mark per training step (unless the job calls ``edo.step()`` itself)."""

from ..facts import _facts
from ..facts import _family
from ..facts import _loss
from ..plan import _lowp
from ..runtime import _state
from ..runtime import _tables
from ..runtime._state import R
from ..runtime._tables import tensor_bytes


class _OptCache(object):
    __slots__ = ("generation", "ngroups", "params", "sizes", "heads")



def _update_extra(opt):
    s = _state.S
    c = s.opt_cache.get(opt)
    groups = opt.param_groups
    if c is None or c.generation != s.generation or c.ngroups != len(groups):
        old = c
        c = _OptCache()
        c.generation = s.generation
        c.ngroups = len(groups)
        c.params = []
        c.heads = []
        c.sizes = old.sizes if old is not None else {}
        for g in groups:
            for p in g.get("params", ()):
                tab = _tables.table_for_weight(p)
                if tab is not None:
                    c.params.append((p, tab, g))
                elif s.head_weights:
                    h = _family.head_for_weight(p)
                    if h is not None:
                        c.heads.append((p, h))
        s.opt_cache[opt] = c
    t = R.torch
    prefix = type(opt).__name__.lower()
    state = opt.state
    for p, h in c.heads:   # an untied LM head: its gradient and state, beside its token table
        _family.head_state(h, prefix, state.get(p) if hasattr(state, "get") else None, p.grad)
    if not c.params:
        return
    b = R.backend
    for p, tab, _g in c.params:
        st = state.get(p) if hasattr(state, "get") else None
        if st:
            for k, v in st.items():
                if isinstance(v, t.Tensor) and v.numel() > 1:
                    kind = "%s.%s" % (prefix, k)
                    nb = tensor_bytes(v)
                    key = (tab.handle, kind)
                    if c.sizes.get(key) != nb:
                        c.sizes[key] = nb
                        b.table_set_extra_bytes(tab.handle, kind, nb)
        g = p.grad
        if g is not None:
            nb = tensor_bytes(g)
            key = (tab.handle, "grad")
            if c.sizes.get(key) != nb:
                c.sizes[key] = nb
                b.table_set_extra_bytes(tab.handle, "grad", nb)
    _facts.optimizer_notes(opt, c.params)
    if _facts.watching():
        _facts.check_gradients(c.params)


def mark_step():
    """One edo step: the tracer's mark and the losses' step count."""
    s = _state.S
    s.steps_marked += 1
    if s.act_step or s.heads:
        _family.end_step()
    return R.backend.step()


def after_optimizer_step(opt):
    if not R.enabled:
        return
    try:
        # A low-precision table's fp32 view ends first: its recorded bytes are the ones that stay.
        _lowp.leave(opt)
        s = _state.S
        if R.backend is None:
            _state.backend()
        if s.by_base:
            _update_extra(opt)
        # One mark per training step: a second optimizer (or a wrapper stepping an inner
        # optimizer) with no lookup in between does not mark another step.
        if not s.user_steps and s.dirty:
            s.dirty = False
            mark_step()
        _loss.PENDING.poll()
    except Exception as e:
        _state.internal_error("optimizer step hook", e)


def user_step():
    """edo.step(): the job marks its own steps; automatic marks stop."""
    s = _state.S
    s.user_steps = True
    s.dirty = False
    if not R.enabled:
        return 0
    try:
        _state.backend()
        return mark_step()
    except Exception as e:
        _state.internal_error("step", e)
        return 0
