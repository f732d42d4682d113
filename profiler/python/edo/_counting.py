"""Counting: edo's hook (called by the patched class forward, or a forward pre-hook), the
functional wrappers, and the hand-over of index tensors.

Every index fed to a table is one lookup, including ``padding_idx`` entries (the row is part of
the table) and indices that an ``EmbeddingBag`` with ``include_last_offset`` leaves outside
every bag. CUDA indices are handed to the tracer as device pointers on the current stream: no
host synchronisation. A module's own forward calls ``F.embedding`` too: the hook leaves a
per-thread token that the functional wrapper consumes, so it is not counted twice.
"""

import functools
import weakref

from . import _facts
from . import _family
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
    """``isinstance(h, EdoPreHook)`` holds for the hook functions ``make_hook`` returns, which is
    what every check for "edo's hook" (pickling, jit.script, install_hook) asks."""

    def __instancecheck__(cls, obj):
        return (type.__instancecheck__(cls, obj)
                or type.__instancecheck__(cls, getattr(obj, "_edo_hook", None)))


class EdoPreHook(object, metaclass=_HookType):
    """One module's forward pre-hook: its state, and what it does in eager mode.

    The hook torch calls is a plain function (``make_hook``: a function call costs a third of an
    object's ``__call__``). Eager calls keep the module's ModState here and check it with two
    identity tests and one pointer (no weak-dictionary lookup), valid while no table was
    registered since (``State.generation``). While torch.compile / torch.export trace the hook,
    it puts edo's counting operator into the graph instead (``_compiled``), keyed by ``key``."""

    __slots__ = ("key", "state", "generation", "mod_state", "bag")

    def __init__(self, key=-1):
        self.key = key
        self.state = None
        self.generation = -1
        self.mod_state = None
        self.bag = False   # the module is an EmbeddingBag (its activation is one row per bag)

    def count_eager(self, module, idx, offsets=None):
        """Counts ``idx`` (None: called with keywords) for ``module``; what the operator's
        kernel calls too, with real tensors, when a compiled graph runs. ``offsets``: an
        EmbeddingBag's second argument (its bag count sizes the activation, _family)."""
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
            s.tls.pending = w   # the functional wrapper the forward calls next skips it
        except Exception as e:
            _state.internal_error("forward pre-hook", e)
        return None

    def __reduce__(self):
        # Only reached when a subclass pickles its hooks itself: refuse to put edo in it.
        raise TypeError("edo's forward pre-hook is not picklable")


def make_hook(hs):
    """The function registered as ``hs``'s module's forward pre-hook (a closure: not picklable,
    like the hook state)."""
    count_eager = hs.count_eager

    def _edo_pre_hook(module, args):
        if not R.enabled:
            return None
        compiling = R.compiling
        if compiling is not None and compiling():
            if R.op is not None:
                return _compiled_hook(hs.key, module, args)
            return R.hook_impl(module, args)
        if compiling is None and R.hook_impl is not pre_hook_body:
            return R.hook_impl(module, args)   # torch 2.0-2.2 after torch.compile: as before
        if not args:
            return count_eager(module, None)
        return count_eager(module, args[0], args[1] if len(args) > 1 else None)
    _edo_pre_hook._edo_hook = hs
    return _edo_pre_hook


def _first_call_hook(hs):
    """A forward pre-hook that only takes itself off at the module's first eager call.

    While it is on, torch takes the slow path of ``Module.__call__`` for that call, which reads
    the global forward hooks after the forward: the ones edo registers while the first forward
    names the tables (_torchrec: the bags each call pooled) are called for that call too, as
    they were when edo's hook was a pre-hook. From the next call on torch's fast path stays."""
    def _edo_first_call(module, args):
        compiling = R.compiling
        if compiling is not None and compiling():
            return None   # traced: no change to the module's hooks inside a graph
        hooks = module.__dict__.get("_forward_pre_hooks")
        if hooks:
            # found by a mark, not by name: a closure over itself would be a reference cycle
            # keeping the hook state (and the weight it last saw) until a garbage collection
            for k in [k for k, h in hooks.items() if getattr(h, "_edo_first", False)]:
                del hooks[k]
        return None
    _edo_first_call._edo_hook = hs
    _edo_first_call._edo_first = True
    return _edo_first_call


def _compiled_hook(key, module, args):
    from . import _compiled
    return _compiled.traced_hook(key, module, args)


# The instance attribute that holds a module's hook when its class runs edo's class-level forward
# (wrap_forward); the patched classes carry it as None.
HOOK_ATTR = "_edo_hook"


def hook_of(module):
    """The EdoPreHook counting ``module``'s lookups (in its __dict__ or among its forward
    pre-hooks), or None."""
    h = module.__dict__.get(HOOK_ATTR)
    if h is not None:
        return h._edo_hook
    for h in (module.__dict__.get("_forward_pre_hooks") or {}).values():
        if isinstance(h, EdoPreHook):
            return h._edo_hook
    return None


def wrap_forward(orig):
    """``nn.Embedding.forward`` / ``nn.EmbeddingBag.forward`` with edo's hook called first.

    A forward pre-hook moves torch's ``Module.__call__`` off its no-hook fast path (on torch 2.x
    that alone costs about 2 us a call); a module whose class runs this forward keeps its hook
    in its own ``__dict__`` instead and torch's fast path stays. A subclass that overrides
    forward gets a real pre-hook (install_hook): its forward may never come here."""
    @functools.wraps(orig)
    def forward(self, *args, **kwargs):
        hook = self._edo_hook
        if hook is not None:
            hook(self, args)
        return orig(self, *args, **kwargs)
    forward._edo_original = orig
    return forward


def install_hook(module):
    hooks = module.__dict__.get("_forward_pre_hooks")
    if hooks is None or hook_of(module) is not None:
        return
    with R.lock:
        key = R.next_key
        R.next_key += 1
        hs = EdoPreHook(key)
        keys = R.modules_by_key
        keys[key] = (weakref.ref(module, lambda _r, k=key, d=keys: d.pop(k, None)), hs)
    if getattr(type(module).forward, "_edo_original", None) is not None:
        module.__dict__[HOOK_ATTR] = make_hook(hs)   # the class runs wrap_forward's forward
        module.register_forward_pre_hook(_first_call_hook(hs))
    else:
        module.register_forward_pre_hook(make_hook(hs))
    owners = _state.S.hooks_owner
    hid = id(hooks)
    owners[hid] = weakref.ref(module, lambda _r, k=hid, d=owners: d.pop(k, None))


def wrap_functional(name, orig):
    @functools.wraps(orig)
    def wrapper(input, weight, *args, **kwargs):
        if R.enabled:
            tls = _state.S.tls
            if tls.pending is weight:
                # A module's forward: its hook has just counted these ids (eager only: while
                # traced, hooks leave nothing pending).
                tls.pending = None
                return orig(input, weight, *args, **kwargs)
            compiling = R.compiling
            offsets = (args[0] if args else kwargs.get("offsets")) if name == "embedding_bag" else None
            if compiling is None:                  # torch < 2.3
                if _state.S.by_base:
                    R.functional_impl(name, input, weight, offsets)
            elif not compiling():
                if _state.S.by_base:
                    functional_body(name, input, weight, offsets)
            elif R.op is not None:
                from . import _compiled
                return _compiled.traced_functional(orig, input, weight, args, kwargs)
            elif _state.S.by_base:
                R.functional_impl(name, input, weight, offsets)
        return orig(input, weight, *args, **kwargs)
    wrapper._edo_original = orig
    return wrapper
