"""Counting: the forward pre-hook, the functional wrappers, and the hand-over of index tensors.

Every index fed to a table is one lookup, including ``padding_idx`` entries (the row is part of
the table) and indices that an ``EmbeddingBag`` with ``include_last_offset`` leaves outside
every bag. CUDA indices are handed to the tracer as device pointers on the current stream: no
host synchronisation. A module's own forward calls ``F.embedding`` too: the pre-hook leaves a
per-thread token that the functional wrapper consumes, so it is not counted twice.
"""

import functools
import weakref

from . import _facts
from . import _native
from . import _naming
from . import _state
from . import _tables
from ._state import R


def current_stream(idx):
    """cudaStream_t of the current stream on idx's device, as an int (no Stream object when
    torch has the raw accessor that inductor uses)."""
    t = R.torch
    if R.raw_stream is None:
        f = getattr(getattr(t, "_C", None), "_cuda_getCurrentRawStream", None)
        R.raw_stream = f if f is not None else False
    if R.raw_stream is not False:
        try:
            return R.raw_stream(idx.get_device())
        except Exception:
            R.raw_stream = False
    return t.cuda.current_stream(idx.device).cuda_stream


def count(tab, idx):
    """Hands one tensor of row ids to the tracer. Never syncs with the GPU."""
    t = R.torch
    if not isinstance(idx, t.Tensor):
        return
    dt = idx.dtype
    if dt is t.int64:
        it = _native.I64
    elif dt is t.int32:
        it = _native.I32
    else:
        return
    if idx.layout is not t.strided:
        return
    n = idx.numel()
    if n == 0:
        return
    if idx.is_cuda:
        if not idx.is_contiguous():
            idx = idx.contiguous()   # an async copy kernel on the current stream
        dev = _native.CUDA
        stream = current_stream(idx)
    elif idx.device.type == "cpu":
        if not idx.is_contiguous():
            idx = idx.contiguous()
        dev = _native.HOST
        stream = None
    else:
        return
    b = R.backend
    rc = b.table_lookup(tab.handle, idx.data_ptr(), n, it, dev, stream)
    s = _state.S
    s.dirty = True
    if s.dense_checks_left > 0:   # the first few steps only (_facts: dense use)
        _facts.tally(tab.name, n)
    if rc < 0:
        _state.warn("lookup:%d" % rc, "counting lookups of %s failed: %s (counted as dropped; "
                    "further failures are not reported)" % (tab.name, b.strerror(int(rc))))


def pre_hook_body(module, args):
    try:
        s = _state.S
        w = module._parameters.get("weight")
        if w is None:
            w = _tables.weight_of(module)
        st = s.mod_state.get(module)
        if st is None or st.weight is not w or st.ptr != w.data_ptr():
            if R.backend is None:
                _state.backend()
            st = _naming.ensure(module)
            if st is None:
                return None
        if args:
            count(st.table, args[0])
            s.tls.pending = st.table   # called with keywords (TorchRec): the functional wrapper counts
    except Exception as e:
        _state.internal_error("forward pre-hook", e)
    return None


def functional_body(name, input, weight):
    try:
        tls = _state.S.tls
        pending = getattr(tls, "pending", None)
        if pending is not None:
            tls.pending = None
        tab = _tables.table_for_weight(weight)
        if tab is not None and tab is not pending:
            count(tab, input)
    except Exception as e:
        _state.internal_error("torch.nn.functional." + name, e)


# What the hook and the functional wrappers call; under torch.compile they become
# torch._dynamo.disable'd versions (run eagerly, with real tensors, at a graph break).
R.hook_impl = pre_hook_body
R.functional_impl = functional_body


class EdoPreHook(object):
    """The forward pre-hook put on every Embedding / EmbeddingBag."""

    __slots__ = ()
    __name__ = "_edo_pre_hook"

    def __call__(self, module, args):
        if not R.enabled:
            return None
        return R.hook_impl(module, args)

    def __reduce__(self):
        # Only reached when a subclass pickles its hooks itself: refuse to put edo in it.
        raise TypeError("edo's forward pre-hook is not picklable")


PRE_HOOK = EdoPreHook()


def install_hook(module):
    hooks = module.__dict__.get("_forward_pre_hooks")
    if hooks is None:
        return
    for h in hooks.values():
        if isinstance(h, EdoPreHook):
            return
    module.register_forward_pre_hook(PRE_HOOK)
    owners = _state.S.hooks_owner
    key = id(hooks)
    owners[key] = weakref.ref(module, lambda _r, k=key, d=owners: d.pop(k, None))


def wrap_functional(name, orig):
    @functools.wraps(orig)
    def wrapper(input, weight, *args, **kwargs):
        if R.enabled and _state.S.by_base:
            R.functional_impl(name, input, weight)
        return orig(input, weight, *args, **kwargs)
    wrapper._edo_original = orig
    return wrapper
