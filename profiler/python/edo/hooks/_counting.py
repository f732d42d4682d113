"""Counting in eager mode: what edo's hooks and functional wrappers (_hooks) do with a call's
index tensor, and its hand-over to the tracer.

Every index fed to a table is one lookup, including ``padding_idx`` entries (the row is part of
the table) and indices that an ``EmbeddingBag`` with ``include_last_offset`` leaves outside
every bag. CUDA indices are handed to the tracer as device pointers on the current stream: no
host synchronisation. A module's own forward calls ``F.embedding`` too: the hook leaves a
per-thread token that the functional wrapper consumes, so it is not counted twice.
"""

from ..facts import _facts
from ..facts import _family
from . import _fastcount
from ..runtime import _native
from . import _naming
from ..runtime import _state
from ..runtime import _tables
from ..runtime._state import R
from ..runtime._devices import current_stream  # noqa: F401  (edo.hooks._counting.current_stream)


def count(tab, idx):
    """Hands one tensor of row ids to the tracer. Never syncs with the GPU. The checks are
    the cheap tensor properties (``is_cpu``, not ``device.type``, which builds an object)."""
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
    if idx.is_cpu:
        if not idx.is_contiguous():
            idx = idx.contiguous()
        dev = _native.HOST
        stream = None
    elif idx.is_cuda:
        if not idx.is_contiguous():
            idx = idx.contiguous()   # an async copy kernel on the current stream
        dev = _native.CUDA
        stream = current_stream(idx)
    else:
        return
    b = R.backend
    rc = b.table_lookup(tab.handle, idx.data_ptr(), n, it, dev, stream)
    s = _state.S
    s.dirty = True
    if s.dense_checks_left > 0:   # the first few steps only (_facts: dense use)
        _facts.tally(tab.name, n)
    if rc < 0:
        _lookup_failed(tab, rc)


def _lookup_failed(tab, rc):
    _state.warn("lookup:%d" % rc, "counting lookups of %s failed: %s (counted as dropped; "
                "further failures are not reported)" % (tab.name, R.backend.strerror(int(rc))))


def _module_state(module, w):
    """The module's ModState for weight ``w`` (registering its model when needed), or None."""
    s = _state.S
    st = s.mod_state.get(module)
    if st is None or st.weight is not w or st.ptr != w.data_ptr():
        if R.backend is None:
            _state.backend()
        st = _naming.ensure(module)
    return st


def pre_hook_body(module, args):
    """The hook's work, as a plain function (what torch < 2.3 wraps in torch._dynamo.disable)."""
    try:
        w = module._parameters.get("weight")
        if w is None:
            w = _tables.weight_of(module)
        st = _module_state(module, w)
        if st is None:
            return None
        if args:
            count(st.table, args[0])
            idx = args[0]
            if isinstance(idx, R.torch.Tensor):
                bags = (_family.bags_of(module, idx, args[1] if len(args) > 1 else None)
                        if isinstance(module, R.emb_classes[1]) else None)
                _family.account(st.table, idx, w, bags)
            _state.S.tls.pending = w   # the functional wrapper the forward calls next skips it
    except Exception as e:
        _state.internal_error("forward pre-hook", e)
    return None


def functional_body(name, input, weight, offsets=None):
    """A torch.nn.functional call on a registered table's weight: counted unless the module's
    pre-hook has just counted it (a module called with keywords, TorchRec, is counted here).
    ``offsets``: F.embedding_bag's (its activation is one row per bag, _family)."""
    try:
        tls = _state.S.tls
        pending = tls.pending
        if pending is not None:
            tls.pending = None
            if pending is weight or pending.data_ptr() == weight.data_ptr():
                return
        tab = _tables.table_for_weight(weight)
        if tab is not None:
            count(tab, input)
            if isinstance(input, R.torch.Tensor):
                bags = _family.bags_of(None, input, offsets) if name == "embedding_bag" else None
                _family.account(tab, input, weight, bags)
    except Exception as e:
        _state.internal_error("torch.nn.functional." + name, e)


# What the hook and the functional wrappers call while dynamo traces on a torch without edo's
# operator (< 2.4): torch._dynamo.disable'd versions (run eagerly, with real tensors, at a graph
# break), or nothing under fullgraph=True (_patches._dynamo_compat).
R.hook_impl = pre_hook_body
R.functional_impl = functional_body


class _HookType(type):
    """``isinstance(h, EdoPreHook)`` holds for the hook functions ``_wrappers.make_hook`` returns, which is
    what every check for "edo's hook" (pickling, jit.script, install_hook) asks."""

    def __instancecheck__(cls, obj):
        return (type.__instancecheck__(cls, obj)
                or type.__instancecheck__(cls, getattr(obj, "_edo_hook", None)))


class EdoPreHook(object, metaclass=_HookType):
    """One module's forward pre-hook: its state, and what it does in eager mode.

    The hook torch calls is a plain function (``_wrappers.make_hook``: a function call costs a third of an
    object's ``__call__``). Eager calls keep the module's ModState here and check it with two
    identity tests and one pointer (no weak-dictionary lookup), valid while no table was
    registered since (``State.generation``). While torch.compile / torch.export trace the hook,
    it puts edo's counting operator into the graph instead (``_compiled``), keyed by ``key``."""

    __slots__ = ("key", "state", "generation", "mod_state", "bag", "fast")

    def __init__(self, key=-1):
        self.key = key
        self.state = None
        self.generation = -1
        self.mod_state = None
        self.bag = False   # the module is an EmbeddingBag (its activation is one row per bag)
        self.fast = _fastcount.new_record()   # what the forward's C fast path checks (or None)

    def count_eager(self, module, idx, offsets=None, direct=False):
        """Counts ``idx`` (None: called with keywords) for ``module``; what the operator's
        kernel calls too, with real tensors, when a compiled graph runs. ``offsets``: an
        EmbeddingBag's second argument (its bag count sizes the activation, _family).
        ``direct``: the caller then runs torch's forward without edo's functional wrapper
        (_wrappers.wrap_forward) and is told True once the ids are counted; otherwise the
        weight is left pending for the wrapper the forward calls next, and None returned."""
        try:
            w = module._parameters.get("weight")
            if w is None:
                w = _tables.weight_of(module)
            s = _state.S
            st = self.mod_state
            if (st is None or self.state is not s or self.generation != s.generation
                    or st.weight is not w or st.ptr != w.data_ptr()):
                st = _module_state(module, w)
                if st is None:
                    return None
                self.state, self.generation, self.mod_state = s, s.generation, st
                self.bag = isinstance(module, R.emb_classes[1])
            if idx is None:
                return None
            t = R.torch
            tab = st.table
            n = None
            if (idx.__class__ is t.Tensor and idx.layout is t.strided and idx.is_cpu
                    and idx.dtype is t.int64 and idx.is_contiguous()):
                # The common case inline: contiguous int64 ids on the host.
                n = idx.numel()
                if n:
                    rc = R.backend.table_lookup(tab.handle, idx.data_ptr(), n, _native.I64,
                                                _native.HOST, None)
                    s.dirty = True
                    if s.dense_checks_left > 0:
                        _facts.tally(tab.name, n)
                    if rc < 0:
                        _lookup_failed(tab, rc)
            else:
                count(tab, idx)
            if n is not None or isinstance(idx, t.Tensor):
                bags = _family.bags_of(module, idx, offsets) if self.bag else None
                _family.account(tab, idx, w, bags, n)
            if direct:
                fast = self.fast
                if fast is not None and not fast.armed:
                    _fastcount.arm(fast, s, st, w, self.bag, module)
                return True
            s.tls.pending = w   # the functional wrapper the forward calls next skips it
        except Exception as e:
            _state.internal_error("forward pre-hook", e)
        return None

    def __reduce__(self):
        # Only reached when a subclass pickles its hooks itself: refuse to put edo in it.
        raise TypeError("edo's forward pre-hook is not picklable")
