"""Discovery and naming: which model a table belongs to, and what it is called.

``table_name()`` is the one place where a table's name is decided:
  1. a name carried from the process that pickled the module (a spawn-context DataLoader
     worker, torch.multiprocessing): the table keeps the name it has in the parent;
  2. its qualified name in a model (what ``root.named_modules()`` says, e.g.
     ``embeddings.word_embeddings``, with ``prefix.`` in front under ``edo.instrument(m,
     prefix)``). The top-level module is the one passed to ``edo.instrument`` or, in automatic
     mode, found at the first forward by scanning the live ``nn.Module`` objects (``gc``) for
     the ones that are nobody's child;
  3. a table in no model: its class and shape, ``Embedding[1000x16]``; the k-th table of the
     same class and shape (in creation order) is ``Embedding[1000x16]#k``. The name does not
     depend on where in the file the table is created, so two versions of a script name the
     same table alike (``edo diff``).
Registration (``_tables.register_weight``) only adds ``#k`` when the name is already taken by
another tensor.
"""

import gc
import os
import weakref

from ..facts import _facts
from ..facts import _family
from ..runtime import _state
from ..runtime import _tables
from ..facts import _torchrec
from ..facts import _weights
from ..runtime._state import R, ModState

_MAX_SCANS = 64
_MAX_PATHS = 200000
_WRAPPERS = {"DistributedDataParallel": "module", "DataParallel": "module",
             "OptimizedModule": "_orig_mod", "FullyShardedDataParallel": "_fsdp_wrapped_module"}


# ---- the name ------------------------------------------------------------------------------

def table_name(module, path=None):
    """The name of ``module``'s table: carried from the parent process, else ``path`` (its
    qualified name in a model, None when it is in none), else its class-and-shape name."""
    carried = _state.S.carried.get(module)
    if carried:
        return carried
    if path:
        return path
    return standalone_name(module)


def standalone_name(module):
    """``Embedding[rows x dim]``, ``#k`` for the k-th of that class and shape (creation order;
    a module created before edo was patched gets its number when first named)."""
    s = _state.S
    name = s.standalone.get(module)
    if name is None:
        name = _shape_label(module)
        s.shape_counts[name] += 1
        k = s.shape_counts[name]
        if k > 1:
            name = "%s#%d" % (name, k)
        try:
            s.standalone[module] = name
        except TypeError:
            pass
    return name


def _shape_label(module):
    w = _tables.weight_of(module) if R.torch is not None else None
    cls = type(module).__name__
    if w is None or w.dim() != 2:
        return "%s[?]" % cls
    return "%s[%dx%d]" % (cls, int(w.shape[0]), int(w.shape[1]))


def name_for_pickling(module):
    """The name this module's table has (or would get) here, for a process that unpickles it."""
    s = _state.S
    st = s.mod_state.get(module)
    if st is not None:
        return st.table.name
    carried = s.carried.get(module)
    if carried:
        return carried
    for roots in (s.explicit_roots, s.auto_roots):
        for ref, prefix in list(roots):
            r = ref()
            if r is None:
                continue
            for n, m in walk(r, prefix):
                if m is module and n:
                    return n
    return standalone_name(module)


def on_new_module(module, carried=None):
    """Every new (or unpickled) embedding module: creation order, class-and-shape name."""
    s = _state.S
    with R.lock:
        s.creation_seq += 1
        s.seq_of[module] = s.creation_seq
        if carried:
            s.carried[module] = carried
        else:
            standalone_name(module)


# ---- models -------------------------------------------------------------------------------

def unwrap(root):
    """DDP / DataParallel / torch.compile / torch.export wrappers: name relative to the wrapped
    model. (torch.export's tracing wrapper, a local class holding the model as
    ``_export_root``, can outlive the export until the next garbage collection.)"""
    for _ in range(8):
        attr = _WRAPPERS.get(type(root).__name__)
        if attr is None and "_export_root" in getattr(root, "_modules", ()):
            attr = "_export_root"
        if attr is None:
            return root
        inner = root._modules.get(attr) if hasattr(root, "_modules") else None
        if inner is None:
            return root
        root = inner
    return root


def walk(root, prefix):
    """(qualified name, module) for every path from root (shared modules once per path,
    cycles cut)."""
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


def in_tree(root, module):
    for _, m in walk(root, ""):
        if m is module:
            return True
    return False


def gc_roots():
    """Every live nn.Module that is no other module's child, biggest tree first."""
    Module = R.torch.nn.Module
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


def bind(module, w, tab):
    """Records that ``module`` reads table ``tab`` (its owner when tied) through weight ``w``."""
    st = ModState(w, _tables.safe_ptr(w), _tables.owner_of(tab))
    _state.S.mod_state[module] = st
    _weights.watch(module, st.table)
    return st


def register_tree(root, prefix):
    """Registers every embedding in root's tree, then ties of other modules' weights."""
    s = _state.S
    paths = walk(root, prefix)
    emb = [(n, m) for n, m in paths if isinstance(m, R.emb_classes)]
    others = [(n, m) for n, m in paths if not isinstance(m, R.emb_classes)]
    found = False
    for n, m in emb:
        if not n:
            continue   # the root itself is an embedding: named on its own
        st = s.mod_state.get(m)
        w = _tables.weight_of(m)
        if w is None:
            continue
        name = table_name(m, n)
        if st is not None and st.weight is w and st.ptr == _tables.safe_ptr(w):
            if name != st.table.name and name not in s.tables:
                _tables.register_weight(name, w, m)   # a second path to the same module: a tie
            continue
        tab = _tables.register_weight(name, w, m)
        if tab is not None:
            bind(m, w, tab)
            found = True
    for n, m in others:
        params = getattr(m, "_parameters", None)
        if not params or not n:
            continue
        w = params.get("weight")
        if w is None or getattr(w, "dim", lambda: 0)() != 2:
            continue
        prev = s.tables.get(n)
        if prev is not None and prev.weight_ref() is w and prev.base == _tables.safe_ptr(w):
            continue
        owner = _tables.table_for_weight(w)
        if owner is not None:
            _tables.register_weight(n, w, m)
            if isinstance(m, R.torch.nn.Linear):
                # A tied head: its forward reads every row of the table (pytorch.dense_use).
                _facts.send_dense(owner.name, "nn.Linear %r holds the same weight (a tied head reads every row)" % n)
    # The token table's LM head, tied or untied (pytorch.lm_head.TABLE notes).
    emb_tables = []
    for _n, m in emb:
        st = s.mod_state.get(m)
        if st is not None and st.table not in emb_tables:
            emb_tables.append(st.table)
    if emb_tables:
        _family.recognise(others, emb_tables)
    _torchrec.recognise(paths, s.tables, s.name_owner, _state.backend())   # TorchRec config names, features
    return found


def _explicit_roots_only():
    # The same spellings of "off" as EDO_TORCH (anything else: the default, scanning on).
    return os.environ.get("EDO_TORCH_SCAN", "1").strip().lower() in ("0", "off", "false", "no")


def ensure(module):
    """Registers ``module`` (and its siblings in its model) if needed; returns its ModState."""
    s = _state.S
    with R.lock:
        w = _tables.weight_of(module)
        if w is None:
            return None
        st = s.mod_state.get(module)
        if st is not None and st.weight is w and st.ptr == _tables.safe_ptr(w):
            return st
        # 1. the model it already belongs to, or an explicit / known root
        for roots in (s.explicit_roots, s.auto_roots):
            for ref, prefix in list(roots):
                r = ref()
                if r is None:
                    roots.remove((ref, prefix))
                    continue
                if in_tree(r, module):
                    register_tree(r, prefix)
                    st = s.mod_state.get(module)
                    if st is not None and st.weight is w:
                        return st
        # 2. a scan of the live modules, once per batch of newly created modules
        seq = s.seq_of.get(module, 0)
        if s.scans < _MAX_SCANS and (seq > s.last_scan_seq or seq == 0) and not _explicit_roots_only():
            s.scans += 1
            s.last_scan_seq = s.creation_seq
            # Remember every model that holds an embedding, so that the next new table
            # is looked up there first, without another scan.
            mine = None
            for r in gc_roots():
                r2 = unwrap(r)
                if r2 is module or isinstance(r2, R.emb_classes):
                    continue
                paths = walk(r2, "")
                if not any(isinstance(m, R.emb_classes) for _, m in paths):
                    continue
                if not any(ref() is r2 for ref, _ in s.auto_roots):
                    s.auto_roots.append((weakref.ref(r2), ""))
                if mine is None and any(m is module for _, m in paths):
                    mine = r2
            if mine is not None:
                register_tree(mine, "")
                st = s.mod_state.get(module)
                if st is not None and st.weight is w:
                    return st
        # 3. DataParallel replica: same hooks dict as the module it was copied from
        owner = s.hooks_owner.get(id(module._forward_pre_hooks))
        owner = owner() if owner is not None else None
        replica = owner is not None and owner is not module and getattr(module, "_is_replica", False)
        if replica:
            ost = s.mod_state.get(owner) or ensure(owner)
            base_name = ost.table.name if ost is not None else table_name(owner)
            name = "%s@%s" % (base_name, w.device)
        else:
            # 4. not reachable from any model
            name = table_name(module)
        tab = _tables.register_weight(name, w, module)
        if tab is None:
            return None
        if replica:
            # A replica lives for one forward: no snapshot when it goes (its owner has one).
            st = ModState(w, _tables.safe_ptr(w), _tables.owner_of(tab))
            s.mod_state[module] = st
            return st
        return bind(module, w, tab)
