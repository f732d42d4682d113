"""PyTorch auto-instrumentation: registers embedding tables and counts their lookups.

What is patched (once, by ``patch()``, when torch has been imported):
  * ``nn.Embedding`` / ``nn.EmbeddingBag`` ``__init__`` (and ``__setstate__``): every new
    instance, subclasses included, gets a forward pre-hook (``_EdoPreHook``) that registers
    the table on first use and counts the indices of every forward. ``__getstate__`` leaves
    the hook out, so pickled / deep-copied models never reference edo.
  * ``torch.nn.functional.embedding`` / ``embedding_bag``: a direct call whose weight is a
    registered table is counted; the call made by the module's own forward is not counted
    twice (the pre-hook leaves a per-thread token that the functional wrapper consumes).
  * the optimizer post-step hook: optimizer state and gradients of table weights are
    recorded with ``edo_table_set_extra_bytes``, and one step is marked with ``edo_step``
    (unless the job calls ``edo.step()`` itself).
  * ``torch.jit.script``: our hooks are taken off while a module is scripted (TorchScript
    cannot compile them); a scripted module is not counted.

Table names are module qualified names relative to the top-level module (what
``root.named_modules()`` says, e.g. ``embeddings.word_embeddings``). The top-level module
is the one passed to ``edo.instrument`` or, in automatic mode, found once at the first
forward by scanning the live ``nn.Module`` objects (``gc``) for the ones that are nobody's
child. A table not reachable from any other module is named ``Embedding#3@train.py:42``
(class, creation order, creation site).

Counting semantics: every index fed to the table is one lookup, including ``padding_idx``
entries (the row is part of the table) and including indices that an ``EmbeddingBag``
with ``include_last_offset`` leaves outside every bag. CUDA indices are handed to the
tracer as device pointers on the current stream: no host synchronisation.

Nothing here may raise into the job or change what it computes: every hook catches its
own exceptions (one warning, then carries on).
"""

import collections
import functools
import gc
import os
import sys
import threading
import weakref

from . import _native, _torchrec

_torch = None          # the torch module, once patched
_backend = None        # _native.NativeBackend / NullBackend / a test fake
_patched = False
_enabled = True        # EDO_TORCH=0 or edo.disable() turns the hooks into no-ops
_user_steps = False    # the job called edo.step(): no automatic steps any more
_dirty = False         # lookups since the last automatic step
_lock = threading.RLock()
_tls = threading.local()
_generation = 0        # bumped whenever a table is registered

_EMB_CLASSES = ()      # (nn.Embedding, nn.EmbeddingBag)
_orig = {}             # originals of everything patched, for unpatch()

_THIS_DIR = os.path.dirname(os.path.abspath(__file__))


def _env_disabled():
    return os.environ.get("EDO_TORCH", "1").strip().lower() in ("0", "off", "false", "no")


def backend():
    global _backend
    if _backend is None:
        with _lock:
            if _backend is None:
                _backend = _native.load()
    return _backend


def set_backend(b):
    """Replaces the native binding (tests pass a fake with the same methods)."""
    global _backend
    _backend = b


def _warn(key, msg):
    _native.warn_once(key, msg)


def _internal_error(where, exc):
    _warn("internal:" + where, "internal error in %s (%s: %s); continuing without it"
          % (where, type(exc).__name__, exc))


# ----------------------------------------------------------------------------------------
# Tables
# ----------------------------------------------------------------------------------------

class Table(object):
    __slots__ = ("name", "handle", "base", "rows", "dim", "dtype", "device", "tied_to",
                 "weight_ref", "__weakref__")

    def __init__(self, name, handle, base, rows, dim, dtype, device, tied_to, weight):
        self.name = name
        self.handle = handle
        self.base = base
        self.rows = rows
        self.dim = dim
        self.dtype = dtype
        self.device = device
        self.tied_to = tied_to      # name of the table this one is tied to, or None
        try:
            self.weight_ref = weakref.ref(weight)
        except TypeError:
            self.weight_ref = lambda: None

    def as_dict(self):
        return {"name": self.name, "handle": self.handle, "rows": self.rows, "dim": self.dim,
                "dtype": self.dtype, "device": self.device, "tied_to": self.tied_to}


_tables = collections.OrderedDict()   # name -> Table
_by_base = {}                         # data_ptr -> owner Table (first name on that pointer)
_name_owner = {}                      # name -> weakref of the module that holds it


class _ModState(object):
    __slots__ = ("weight", "ptr", "table")

    def __init__(self, weight, ptr, table):
        self.weight = weight
        self.ptr = ptr
        self.table = table


_mod_state = weakref.WeakKeyDictionary()   # embedding module -> _ModState
_created = weakref.WeakKeyDictionary()     # module -> "Embedding#3@file.py:42"
_class_counts = collections.Counter()
_creation_seq = 0
_seq_of = weakref.WeakKeyDictionary()      # module -> creation sequence number
_hooks_owner = {}                          # id(_forward_pre_hooks dict) -> weakref(module)


def _dtype_code(dt):
    t = _torch
    m = {t.float32: ("fp32", _native.F32), t.float16: ("fp16", _native.F16),
         t.bfloat16: ("bf16", _native.BF16), t.int8: ("int8", _native.I8),
         t.uint8: ("uint8", _native.U8)}
    f8 = getattr(t, "float8_e4m3fn", None)
    if f8 is not None:
        m[f8] = ("fp8_e4m3", _native.F8E4M3)
    return m.get(dt)


def _register_weight(name, weight, module=None):
    """Registers ``weight`` (a 2-D tensor) as table ``name``; returns the Table or None.

    A weight whose data pointer already belongs to a table is registered under the new
    name on the same base pointer, which the tracer records as a tie."""
    global _generation
    t = _torch
    if not isinstance(weight, t.Tensor) or weight.dim() != 2:
        return None
    dev = weight.device.type
    if dev == "cpu":
        device = _native.HOST
    elif dev == "cuda":
        device = _native.CUDA
    else:
        _warn("device:" + dev, "table %s is on device '%s', which edo does not trace; skipped"
              % (name, dev))
        return None
    code = _dtype_code(weight.dtype)
    if code is None:
        _warn("dtype:" + str(weight.dtype), "table %s has dtype %s, which edo does not record; "
              "skipped" % (name, weight.dtype))
        return None
    try:
        base = weight.data_ptr()
    except Exception:
        return None
    if base == 0:
        return None
    rows, dim = int(weight.shape[0]), int(weight.shape[1])
    owner = _by_base.get(base)
    if owner is not None and owner.weight_ref() is None:
        owner = None   # the old tensor is gone, the memory was reused
    tied_to = None
    if owner is not None and owner.name != name:
        tied_to = owner.name
        base = owner.base
    # Make the name unique among different tensors: a second model with the same layout.
    prev = _tables.get(name)
    if prev is not None and prev.base != base and module is not None:
        prev_mod = _name_owner.get(name)
        prev_mod = prev_mod() if prev_mod is not None else None
        if prev_mod is not None and prev_mod is not module:
            k = 2
            while ("%s#%d" % (name, k)) in _tables:
                k += 1
            name = "%s#%d" % (name, k)
    b = backend()
    h = b.table_register(name, base, rows, dim, code[1], device)
    if h == -6 and prev is not None:
        # Same name, another shape or dtype (e.g. model.half() after a forward): new name.
        k = 2
        while ("%s#%d" % (name, k)) in _tables:
            k += 1
        name = "%s#%d" % (name, k)
        h = b.table_register(name, base, rows, dim, code[1], device)
    if h < 0:
        _warn("register:%d" % h, "cannot register table %s: %s" % (name, b.strerror(int(h))))
        return None
    tab = Table(name, int(h), base, rows, dim, code[0], "cuda" if device == _native.CUDA else "host",
                tied_to, weight)
    if prev is not None and prev.base in _by_base and _by_base[prev.base] is prev:
        del _by_base[prev.base]   # the table moved (model.to(...)): forget the old pointer
    _tables[name] = tab
    if owner is None:
        _by_base[base] = tab
    if module is not None:
        _name_owner[name] = weakref.ref(module)
    _generation += 1
    return tab


def _table_for_weight(weight):
    """The registered owner table whose base is ``weight``'s data pointer, or None."""
    try:
        tab = _by_base.get(weight.data_ptr())
    except Exception:
        return None
    if tab is None:
        return None
    w = tab.weight_ref()
    if w is None:
        return None
    return tab


# ----------------------------------------------------------------------------------------
# Names: roots and qualified names
# ----------------------------------------------------------------------------------------

_explicit_roots = []   # [(weakref(root), prefix)], from edo.instrument
_auto_roots = []       # [(weakref(root), prefix)], found by the gc scan
_last_scan_seq = -1
_scans = 0
_MAX_SCANS = 64
_MAX_PATHS = 200000
_WRAPPERS = {"DistributedDataParallel": "module", "DataParallel": "module",
             "OptimizedModule": "_orig_mod", "FullyShardedDataParallel": "_fsdp_wrapped_module"}


def _unwrap(root):
    """DDP / DataParallel / torch.compile wrappers: name relative to the wrapped model."""
    for _ in range(8):
        attr = _WRAPPERS.get(type(root).__name__)
        if attr is None:
            return root
        inner = root._modules.get(attr) if hasattr(root, "_modules") else None
        if inner is None:
            return root
        root = inner
    return root


def _walk(root, prefix):
    """Yields (qualified name, module) for every path from root (shared modules once per
    path, cycles cut)."""
    out = []
    stack = [(prefix, root, frozenset())]
    while stack and len(out) < _MAX_PATHS:
        name, m, onpath = stack.pop()
        out.append((name, m))
        mods = getattr(m, "_modules", None)
        if not mods:
            continue
        onpath = onpath | {id(m)}
        children = []
        for cname, c in mods.items():
            if c is None or id(c) in onpath:
                continue
            children.append(((name + "." + cname) if name else cname, c, onpath))
        stack.extend(reversed(children))
    return out


def _creation_label(module):
    label = _created.get(module)
    if label is None:
        label = "%s#?@<unknown>" % type(module).__name__
    return label


def _register_tree(root, prefix):
    """Registers every embedding in root's tree, then ties of other modules' weights."""
    paths = _walk(root, prefix)
    emb = [(n, m) for n, m in paths if isinstance(m, _EMB_CLASSES)]
    others = [(n, m) for n, m in paths if not isinstance(m, _EMB_CLASSES)]
    found = False
    for n, m in emb:
        if not n:
            continue   # the root itself is an embedding: named by its creation site below
        st = _mod_state.get(m)
        w = _weight_of(m)
        if w is None:
            continue
        if st is not None and st.weight is w and st.ptr == _safe_ptr(w):
            if n != st.table.name and n not in _tables:
                _register_weight(n, w, m)   # a second path to the same module: a tie
            continue
        tab = _register_weight(n, w, m)
        if tab is not None:
            _mod_state[m] = _ModState(w, _safe_ptr(w), _owner_of(tab))
            found = True
    for n, m in others:
        params = getattr(m, "_parameters", None)
        if not params or not n:
            continue
        w = params.get("weight")
        if w is None or getattr(w, "dim", lambda: 0)() != 2:
            continue
        prev = _tables.get(n)
        if prev is not None and prev.weight_ref() is w and prev.base == _safe_ptr(w):
            continue
        if _table_for_weight(w) is not None:
            _register_weight(n, w, m)
    _torchrec.recognise(paths, _tables, _name_owner, backend())   # TorchRec config names, features
    return found


def _owner_of(tab):
    if tab.tied_to is not None:
        return _tables.get(tab.tied_to, tab)
    return tab


def _weight_of(m):
    """The module's weight: a Parameter, or a plain tensor attribute (DataParallel replicas)."""
    params = getattr(m, "_parameters", None)
    w = params.get("weight") if params else None
    if w is None:
        w = m.__dict__.get("weight")
    return w if isinstance(w, _torch.Tensor) else None


def _safe_ptr(w):
    try:
        return w.data_ptr()
    except Exception:
        return 0


def _in_tree(root, module):
    for _, m in _walk(root, ""):
        if m is module:
            return True
    return False


def _gc_roots():
    """Every live nn.Module that is no other module's child, biggest tree first."""
    Module = _torch.nn.Module
    mods = [o for o in gc.get_objects() if issubclass(type(o), Module)]
    children = set()
    for m in mods:
        d = m.__dict__.get("_modules")
        if d:
            for c in d.values():
                if c is not None:
                    children.add(id(c))
    roots = [m for m in mods if id(m) not in children]
    sized = []
    for r in roots:
        n = 0
        for _ in r.modules():
            n += 1
        sized.append((-n, r))
    sized.sort(key=lambda x: x[0])
    return [r for _, r in sized]


def _ensure(module):
    """Registers ``module`` (and its siblings in its model) if needed; returns its state."""
    global _last_scan_seq, _scans
    with _lock:
        w = _weight_of(module)
        if w is None:
            return None
        st = _mod_state.get(module)
        if st is not None and st.weight is w and st.ptr == _safe_ptr(w):
            return st
        # 1. the model it already belongs to, or an explicit / known root
        for roots in (_explicit_roots, _auto_roots):
            for ref, prefix in list(roots):
                r = ref()
                if r is None:
                    roots.remove((ref, prefix))
                    continue
                if _in_tree(r, module):
                    _register_tree(r, prefix)
                    st = _mod_state.get(module)
                    if st is not None and st.weight is w:
                        return st
        # 2. a scan of the live modules, once per batch of newly created modules
        seq = _seq_of.get(module, 0)
        if _scans < _MAX_SCANS and (seq > _last_scan_seq or seq == 0) and not _explicit_roots_only():
            _scans += 1
            _last_scan_seq = _creation_seq
            # Remember every model that holds an embedding, so that the next new table
            # is looked up there first, without another scan.
            mine = None
            for r in _gc_roots():
                r2 = _unwrap(r)
                if r2 is module or isinstance(r2, _EMB_CLASSES):
                    continue
                paths = _walk(r2, "")
                if not any(isinstance(m, _EMB_CLASSES) for _, m in paths):
                    continue
                if not any(ref() is r2 for ref, _ in _auto_roots):
                    _auto_roots.append((weakref.ref(r2), ""))
                if mine is None and any(m is module for _, m in paths):
                    mine = r2
            if mine is not None:
                _register_tree(mine, "")
                st = _mod_state.get(module)
                if st is not None and st.weight is w:
                    return st
        # 3. DataParallel replica: same hooks dict as the module it was copied from
        owner = _hooks_owner.get(id(module._forward_pre_hooks))
        owner = owner() if owner is not None else None
        if owner is not None and owner is not module and getattr(module, "_is_replica", False):
            ost = _mod_state.get(owner) or _ensure(owner)
            base_name = ost.table.name if ost is not None else _creation_label(owner)
            name = "%s@%s" % (base_name, w.device)
        else:
            # 4. not reachable from any model: the creation site
            name = _creation_label(module)
        tab = _register_weight(name, w, module)
        if tab is None:
            return None
        st = _ModState(w, _safe_ptr(w), _owner_of(tab))
        _mod_state[module] = st
        return st


def _explicit_roots_only():
    # The same spellings of "off" as EDO_TORCH (anything else: the default, scanning on).
    return os.environ.get("EDO_TORCH_SCAN", "1").strip().lower() in ("0", "off", "false", "no")


def instrument(model, prefix=""):
    """Registers every embedding of ``model`` (named relative to it, with ``prefix.``
    in front when given) and makes sure its lookups are counted. Returns ``model``."""
    if not _enabled:
        return model
    if _torch is None:
        import torch  # noqa: F401  (the caller has torch: it passes a model)
        del torch
        patch()
    if not _patched:
        return model
    try:
        with _lock:
            root = _unwrap(model)
            if not any(ref() is root for ref, _ in _explicit_roots):
                _explicit_roots.insert(0, (weakref.ref(root), prefix or ""))
            # modules created before edo was patched have no hook yet
            for _, m in _walk(root, ""):
                if isinstance(m, _EMB_CLASSES):
                    _install_hook(m)
            if isinstance(root, _EMB_CLASSES):
                name = prefix or _creation_label(root)
                w = _weight_of(root)
                tab = _register_weight(name, w, root)
                if tab is not None:
                    _mod_state[root] = _ModState(w, _safe_ptr(w), _owner_of(tab))
            else:
                _register_tree(root, prefix or "")
    except Exception as e:  # never break the caller
        _internal_error("instrument", e)
    return model


# ----------------------------------------------------------------------------------------
# Counting
# ----------------------------------------------------------------------------------------

_raw_stream = None


def _current_stream(idx):
    """cudaStream_t of the current stream on idx's device, as an int (no Stream object when
    torch has the raw accessor that inductor uses)."""
    global _raw_stream
    t = _torch
    if _raw_stream is None:
        f = getattr(getattr(t, "_C", None), "_cuda_getCurrentRawStream", None)
        _raw_stream = f if f is not None else False
    if _raw_stream is not False:
        try:
            return _raw_stream(idx.get_device())
        except Exception:
            _raw_stream = False
    return t.cuda.current_stream(idx.device).cuda_stream


def _count(tab, idx):
    """Hands one tensor of row ids to the tracer. Never syncs with the GPU."""
    global _dirty
    t = _torch
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
        stream = _current_stream(idx)
    elif idx.device.type == "cpu":
        if not idx.is_contiguous():
            idx = idx.contiguous()
        dev = _native.HOST
        stream = None
    else:
        return
    rc = _backend.table_lookup(tab.handle, idx.data_ptr(), n, it, dev, stream)
    _dirty = True
    if rc < 0:
        _warn("lookup:%d" % rc, "counting lookups of %s failed: %s (counted as dropped; "
              "further failures are not reported)" % (tab.name, _backend.strerror(int(rc))))


def _pre_hook_body(module, args):
    try:
        w = module._parameters.get("weight")
        if w is None:
            w = _weight_of(module)
        st = _mod_state.get(module)
        if st is None or st.weight is not w or st.ptr != w.data_ptr():
            if _backend is None:
                backend()
            st = _ensure(module)
            if st is None:
                return None
        if args:
            _count(st.table, args[0])
            _tls.pending = st.table   # called with keywords (TorchRec): the functional wrapper counts
    except Exception as e:
        _internal_error("forward pre-hook", e)
    return None


def _functional_body(name, input, weight):
    try:
        pending = getattr(_tls, "pending", None)
        if pending is not None:
            _tls.pending = None
        tab = _table_for_weight(weight)
        if tab is not None and tab is not pending:
            _count(tab, input)
    except Exception as e:
        _internal_error("torch.nn.functional." + name, e)


# What the hook and the functional wrappers call; under torch.compile they become
# torch._dynamo.disable'd versions (run eagerly, with real tensors, at a graph break).
_hook_impl = _pre_hook_body
_functional_impl = _functional_body


class _EdoPreHook(object):
    """The forward pre-hook put on every Embedding / EmbeddingBag."""

    __slots__ = ()
    __name__ = "_edo_pre_hook"

    def __call__(self, module, args):
        if not _enabled:
            return None
        return _hook_impl(module, args)

    def __reduce__(self):
        # Only reached when a subclass pickles its hooks itself: refuse to put edo in it.
        raise TypeError("edo's forward pre-hook is not picklable")


_PRE_HOOK = _EdoPreHook()


def _install_hook(module):
    hooks = module.__dict__.get("_forward_pre_hooks")
    if hooks is None:
        return
    for h in hooks.values():
        if isinstance(h, _EdoPreHook):
            return
    module.register_forward_pre_hook(_PRE_HOOK)
    key = id(hooks)
    _hooks_owner[key] = weakref.ref(module, lambda _r, k=key: _hooks_owner.pop(k, None))


def _site():
    f = sys._getframe(2)
    torch_dir = os.path.dirname(os.path.abspath(_torch.__file__)) if _torch is not None else None
    while f is not None:
        fn = f.f_code.co_filename
        afn = os.path.abspath(fn) if not fn.startswith("<") else fn
        if not (torch_dir and afn.startswith(torch_dir)) and not afn.startswith(_THIS_DIR):
            return "%s:%d" % (os.path.basename(fn), f.f_lineno)
        f = f.f_back
    return "<unknown>"


def _on_new_module(module, site=None):
    global _creation_seq
    try:
        with _lock:
            cls = type(module).__name__
            _class_counts[cls] += 1
            _creation_seq += 1
            _seq_of[module] = _creation_seq
            _created[module] = "%s#%d@%s" % (cls, _class_counts[cls], site or _site())
        if _enabled:
            _install_hook(module)
    except Exception as e:
        _internal_error("module creation", e)


def _wrap_functional(name, orig):
    @functools.wraps(orig)
    def wrapper(input, weight, *args, **kwargs):
        if _enabled and _by_base:
            _functional_impl(name, input, weight)
        return orig(input, weight, *args, **kwargs)
    wrapper._edo_original = orig
    return wrapper


# ----------------------------------------------------------------------------------------
# Optimizer: state bytes and steps
# ----------------------------------------------------------------------------------------

class _OptCache(object):
    __slots__ = ("generation", "ngroups", "params", "sizes")


_opt_cache = weakref.WeakKeyDictionary()


def _tensor_bytes(v):
    try:
        if v.is_sparse:
            return (v._values().numel() * v._values().element_size()
                    + v._indices().numel() * v._indices().element_size())
        return v.numel() * v.element_size()
    except Exception:
        return 0


def _update_extra(opt):
    c = _opt_cache.get(opt)
    groups = opt.param_groups
    if c is None or c.generation != _generation or c.ngroups != len(groups):
        c = _OptCache()
        c.generation = _generation
        c.ngroups = len(groups)
        c.params = []
        c.sizes = {}
        for g in groups:
            for p in g.get("params", ()):
                tab = _table_for_weight(p)
                if tab is not None:
                    c.params.append((p, tab))
        old = _opt_cache.get(opt)
        if old is not None:
            c.sizes = old.sizes
        _opt_cache[opt] = c
    if not c.params:
        return
    t = _torch
    prefix = type(opt).__name__.lower()
    state = opt.state
    b = _backend
    for p, tab in c.params:
        st = state.get(p) if hasattr(state, "get") else None
        if st:
            for k, v in st.items():
                if isinstance(v, t.Tensor) and v.numel() > 1:
                    kind = "%s.%s" % (prefix, k)
                    nb = _tensor_bytes(v)
                    key = (tab.handle, kind)
                    if c.sizes.get(key) != nb:
                        c.sizes[key] = nb
                        b.table_set_extra_bytes(tab.handle, kind, nb)
        g = p.grad
        if g is not None:
            nb = _tensor_bytes(g)
            key = (tab.handle, "grad")
            if c.sizes.get(key) != nb:
                c.sizes[key] = nb
                b.table_set_extra_bytes(tab.handle, "grad", nb)


def _after_optimizer_step(opt):
    global _dirty
    if not _enabled:
        return
    try:
        if _backend is None:
            backend()
        if _by_base:
            _update_extra(opt)
        # One mark per training step: a second optimizer (or a wrapper stepping an inner
        # optimizer) with no lookup in between does not mark another step.
        if not _user_steps and _dirty:
            _dirty = False
            _backend.step()
    except Exception as e:
        _internal_error("optimizer step hook", e)


def user_step():
    """edo.step(): the job marks its own steps; automatic marks stop."""
    global _user_steps, _dirty
    _user_steps = True
    _dirty = False
    if not _enabled:
        return 0
    try:
        return backend().step()
    except Exception as e:
        _internal_error("step", e)
        return 0


# ----------------------------------------------------------------------------------------
# Weight snapshots (edo record --weights / EDO_WEIGHTS=1)
# ----------------------------------------------------------------------------------------

def _weights_wanted():
    return os.environ.get("EDO_WEIGHTS", "0").strip().lower() in ("1", "true", "yes", "on")


def snapshot_weights():
    """Hands every registered table's current weights to the tracer, which keeps the
    hottest rows and a uniform sample for the tuner (nothing is kept unless EDO_WEIGHTS=1).
    Called at exit under ``edo record --weights``; a job may call ``edo.snapshot_weights()``
    itself (e.g. after training, before the weights are freed). Returns the number of tables
    handed over. Never raises."""
    if not _enabled or _torch is None:
        return 0
    t = _torch
    done = 0
    try:
        with _lock:
            tabs = [tab for tab in _tables.values() if tab.tied_to is None]
        b = backend()
        for tab in tabs:
            w = tab.weight_ref()
            if w is None:
                continue
            try:
                with t.no_grad():
                    w = w.detach()
                    if w.dim() != 2 or int(w.shape[0]) != tab.rows or int(w.shape[1]) != tab.dim:
                        continue   # resized since it was registered: not the recorded table
                    if w.stride(1) != 1:
                        w = w.contiguous()
                    if w.is_cuda:
                        dev, stream = _native.CUDA, _current_stream(w)
                    elif w.device.type == "cpu":
                        dev, stream = _native.HOST, None
                    else:
                        continue
                    rc = b.table_weights(tab.handle, w.data_ptr(), w.stride(0) * w.element_size(),
                                         dev, stream)
                if rc < 0:
                    _warn("weights:%d" % rc, "weight snapshot of %s failed: %s" % (tab.name, b.strerror(int(rc))))
                else:
                    done += 1
            except Exception as e:
                _internal_error("weight snapshot of " + tab.name, e)
    except Exception as e:
        _internal_error("weight snapshots", e)
    return done


def _snapshot_at_exit():
    if _weights_wanted():
        snapshot_weights()


# ----------------------------------------------------------------------------------------
# Patching
# ----------------------------------------------------------------------------------------

def _patch_class(cls):
    orig_init = cls.__dict__["__init__"]

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        _on_new_module(self)

    orig_set = cls.__dict__.get("__setstate__")

    def __setstate__(self, state):
        if orig_set is not None:
            orig_set(self, state)
        else:
            super(cls, self).__setstate__(state)
        _on_new_module(self, site="<unpickled>")

    orig_get = cls.__dict__.get("__getstate__")

    def __getstate__(self):
        if orig_get is not None:
            state = orig_get(self)
        else:
            sup = getattr(super(cls, self), "__getstate__", None)
            state = sup() if sup is not None else self.__dict__
        hooks = state.get("_forward_pre_hooks") if isinstance(state, dict) else None
        if hooks and any(isinstance(h, _EdoPreHook) for h in hooks.values()):
            state = dict(state)
            state["_forward_pre_hooks"] = collections.OrderedDict(
                (k, h) for k, h in hooks.items() if not isinstance(h, _EdoPreHook))
        return state

    _orig[(cls, "__init__")] = orig_init
    _orig[(cls, "__setstate__")] = orig_set
    _orig[(cls, "__getstate__")] = orig_get
    cls.__init__ = __init__
    cls.__setstate__ = __setstate__
    cls.__getstate__ = __getstate__


def _patch_optimizer(torch):
    optmod = sys.modules.get("torch.optim.optimizer")
    reg = getattr(optmod, "register_optimizer_step_post_hook", None) if optmod else None
    if reg is not None:
        _orig["opt_handle"] = reg(lambda opt, args, kwargs: _after_optimizer_step(opt))
        return
    Opt = torch.optim.Optimizer
    code = Opt.__dict__.get("_optimizer_step_code")
    if code is not None:
        def _optimizer_step_code(self):
            code(self)
            _after_optimizer_step(self)
        _orig[(Opt, "_optimizer_step_code")] = code
        Opt._optimizer_step_code = _optimizer_step_code
        return
    # Fallback: wrap every optimizer class's step at construction.
    orig_init = Opt.__dict__["__init__"]
    wrapped = set()

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        cls = type(self)
        if cls not in wrapped:
            wrapped.add(cls)
            step = cls.step

            @functools.wraps(step)
            def stepw(self, *a, **k):
                depth = getattr(_tls, "opt_depth", 0)
                _tls.opt_depth = depth + 1
                try:
                    return step(self, *a, **k)
                finally:
                    _tls.opt_depth = depth
                    if depth == 0:
                        _after_optimizer_step(self)
            cls.step = stepw
    _orig[(Opt, "__init__")] = orig_init
    Opt.__init__ = __init__


def _patch_jit(torch):
    jit = getattr(torch, "jit", None)
    orig = getattr(jit, "script", None) if jit is not None else None
    if orig is None:
        return

    F = torch.nn.functional

    @functools.wraps(orig)
    def script(obj, *args, **kwargs):
        # TorchScript compiles what forward calls: while it does, torch.nn.functional holds
        # the original functions and the modules carry no edo hook.
        depth = getattr(_tls, "script_depth", 0)
        if depth:
            return orig(obj, *args, **kwargs)
        _tls.script_depth = 1
        removed = []
        swapped = []
        try:
            for fname in ("embedding", "embedding_bag"):
                cur = getattr(F, fname)
                o = getattr(cur, "_edo_original", None)
                if o is not None:
                    setattr(F, fname, o)
                    swapped.append((fname, cur))
            if isinstance(obj, torch.nn.Module):
                for m in obj.modules():
                    hooks = m.__dict__.get("_forward_pre_hooks")
                    if hooks:
                        for k, h in list(hooks.items()):
                            if isinstance(h, _EdoPreHook):
                                del hooks[k]
                                removed.append((hooks, k, h))
        except Exception as e:
            _internal_error("torch.jit.script", e)
        try:
            return orig(obj, *args, **kwargs)
        finally:
            for hooks, k, h in removed:
                hooks[k] = h
            for fname, cur in swapped:
                setattr(F, fname, cur)
            _tls.script_depth = 0
    _orig[(jit, "script")] = orig
    jit.script = script


def _not_while_compiling(fn):
    """fn, except while dynamo traces (then nothing: no graph break, nothing counted)."""
    comp = getattr(_torch, "compiler", None)
    is_compiling = getattr(comp, "is_compiling", None)
    if is_compiling is None:
        d = sys.modules.get("torch._dynamo")
        is_compiling = getattr(d, "is_compiling", None)
    if is_compiling is None:
        return fn

    def wrapper(*args):
        if is_compiling():
            return None
        return fn(*args)
    return wrapper


def _dynamo_compat(fullgraph=False):
    """torch.compile traces into module hooks. By default ours become graph breaks that run
    eagerly (torch._dynamo.disable): lookups are counted, at the cost of a break per lookup.
    With fullgraph=True a break is an error, so inside compiled graphs nothing is counted."""
    global _hook_impl, _functional_impl
    d = sys.modules.get("torch._dynamo")
    disable = getattr(d, "disable", None) if d is not None else None
    if disable is None:
        return
    try:
        if fullgraph:
            if getattr(_hook_impl, "_edo_mode", None) != "skip":
                _hook_impl = _not_while_compiling(_pre_hook_body)
                _functional_impl = _not_while_compiling(_functional_body)
                _hook_impl._edo_mode = "skip"
                _warn("fullgraph", "torch.compile(fullgraph=True): embedding lookups inside "
                      "compiled graphs are not counted (a graph break would be an error)")
        elif _hook_impl is _pre_hook_body:
            _hook_impl = disable(_pre_hook_body)
            _functional_impl = disable(_functional_body)
    except Exception as e:
        _internal_error("torch.compile support", e)


def _patch_compile(torch):
    orig = getattr(torch, "compile", None)
    if orig is None:
        return

    @functools.wraps(orig)
    def compile(*args, **kwargs):
        out = orig(*args, **kwargs)
        _dynamo_compat(bool(kwargs.get("fullgraph", False)))
        return out
    _orig[(torch, "compile")] = orig
    torch.compile = compile


_released = False


def _release_gpu_capture(tool):
    global _released
    if _released:
        return
    _released = True
    b = backend()
    release = getattr(b, "release_gpu_capture", None)
    if release is not None:
        release(tool)


def _patch_profiler(torch):
    """torch.profiler tracing CUDA needs CUPTI, which only one client can hold in a process:
    edo hands its GPU capture over just before (libedo_trace.so prints one line), so the user's
    trace is complete and edo records everything else."""
    try:
        import torch.autograd.profiler as ap
        cuda = getattr(getattr(torch.autograd, "ProfilerActivity", None), "CUDA", None)
    except Exception:
        return
    if cuda is None:
        return
    for fname in ("_prepare_profiler", "_enable_profiler"):
        orig = getattr(ap, fname, None)
        if orig is None or getattr(orig, "_edo_wrapped", False):
            continue
        _orig[(ap, fname)] = orig

        def wrapped(*args, __orig=orig, **kwargs):
            try:
                acts = args[1] if len(args) > 1 else kwargs.get("activities")
                if _enabled and acts is not None and cuda in acts:
                    _release_gpu_capture("torch.profiler")
            except Exception as e:
                _internal_error("handing CUPTI over to torch.profiler", e)
            return __orig(*args, **kwargs)

        wrapped._edo_wrapped = True
        setattr(ap, fname, wrapped)


def patch():
    """Installs the hooks into the imported torch. Idempotent; never raises."""
    global _torch, _patched, _EMB_CLASSES, _enabled
    if _patched:
        return True
    if _env_disabled():
        _enabled = False
        return False
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "nn"):
        return False
    with _lock:
        if _patched:
            return True
        try:
            _torch = torch
            nn = torch.nn
            _EMB_CLASSES = (nn.Embedding, nn.EmbeddingBag)
            for cls in _EMB_CLASSES:
                _patch_class(cls)
            F = torch.nn.functional
            for fname in ("embedding", "embedding_bag"):
                orig = getattr(F, fname)
                _orig[(F, fname)] = orig
                setattr(F, fname, _wrap_functional(fname, orig))
            _patch_optimizer(torch)
            _patch_jit(torch)
            _patch_compile(torch)
            _patch_profiler(torch)
            _dynamo_compat()
            if _weights_wanted():
                # Registered now, early: atexit runs it late, after the job's own handlers,
                # while the tracer (flushed after Python finalises) still takes frames.
                import atexit
                atexit.register(_snapshot_at_exit)
            _patched = True
        except Exception as e:
            _internal_error("patching torch", e)
            return False
    return True


def unpatch():
    """Undoes patch() (tests)."""
    global _patched
    with _lock:
        for key, orig in list(_orig.items()):
            if key == "opt_handle":
                try:
                    orig.remove()
                except Exception:
                    pass
                continue
            obj, attr = key
            if orig is None:
                try:
                    delattr(obj, attr)
                except AttributeError:
                    pass
            else:
                setattr(obj, attr, orig)
        _orig.clear()
        _patched = False


def reset_state():
    """Forgets every table and root (tests)."""
    global _generation, _dirty, _user_steps, _last_scan_seq, _scans, _released
    with _lock:
        _released = False
        _tables.clear()
        _by_base.clear()
        _name_owner.clear()
        _mod_state.clear()
        _explicit_roots[:] = []
        _auto_roots[:] = []
        _opt_cache.clear()
        _generation += 1
        _dirty = False
        _user_steps = False
        _last_scan_seq = -1
        _scans = 0
        _tls.pending = None


def set_enabled(on):
    global _enabled
    _enabled = bool(on)


def tables():
    """The tables registered so far: name -> dict (rows, dim, dtype, device, tied_to)."""
    with _lock:
        return collections.OrderedDict((n, t.as_dict()) for n, t in _tables.items())
