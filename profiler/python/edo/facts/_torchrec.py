"""TorchRec's collections, recognised in a model's tree (issue 20).

TorchRec's ``EmbeddingBagCollection`` / ``EmbeddingCollection`` (torchrec/modules/
embedding_modules.py, pytorch/torchrec a48cef79) hold one ``nn.EmbeddingBag`` / ``nn.Embedding``
per config in the ``embedding_bags`` / ``embeddings`` ModuleDict, keyed by the config's name,
and keep the configs in ``_embedding_bag_configs`` / ``_embedding_configs`` (``.name``,
``.feature_names``, ``.num_embeddings``, ``.embedding_dim``, ``.pooling``). TorchRec's planner
looks its constraints up by that name, so the recording keeps it: one note per table,
``torchrec.table.<edo table name>`` -> JSON ``{"config", "features", "collection", "pooling",
"bags"}``, through ``edo_note`` into the recording's metadata (no schema of its own).

``bags`` is how many bags the table's EmbeddingBag pooled (the rows of its output, counted by
a forward hook: one int per call, no copy, no sync). ``feature_lookups`` / ``feature_bags``
are per feature (in ``features`` order): the ids and bags of that feature in the
KeyedJaggedTensor the collection was called with, read after its forward from the lengths per
key that the collection's own ``to_dict()`` computed and cached (``_length_per_key``,
torchrec/sparse/jagged_tensor.py in torchrec 1.9.2: ``length_per_key_or_none``), so no extra
device sync; and ``stride()`` / ``stride_per_key()`` for the bags (variable batch per key).
The export divides them for TorchRec's per-feature ``pooling_factors`` and ``batch_sizes``.
They are sent again at exit. The hook is a global one
(``register_module_forward_hook``), put in place only once a collection is found: nothing is
added to the job's modules, so a pickled model never refers to edo.

Recognition is by shape (the attributes above), not by class: torchrec is never imported.
"""

import json
import sys
import weakref

_COLLECTIONS = (("_embedding_bag_configs", "embedding_bags"), ("_embedding_configs", "embeddings"))
_MAX_FEATURES = 1024

_facts = {}        # edo table name -> dict (the note's value)
_sent = {}         # edo table name -> the JSON last sent
_by_module = weakref.WeakKeyDictionary()   # EmbeddingBag module -> edo table name
_by_collection = weakref.WeakKeyDictionary()   # EmbeddingBagCollection -> [edo table name]
_started = weakref.WeakKeyDictionary()   # collection -> its calls begun since the pre-hook exists, not yet ended
_backend = None
_exit_registered = False
_global_hook = None   # the handle of the global forward hook, once a collection is found
_global_pre_hook = None   # and of the global forward pre-hook (marks the calls the hook will end)


def _name_of(path, module, tables, name_owner):
    """The edo table name of ``module`` registered at ``path`` (``path#2`` when renamed)."""
    for name in tables:
        if name != path and not name.startswith(path + "#"):
            continue
        ref = name_owner.get(name)
        if ref is not None and ref() is module:
            return name
    return None


def _text(v):
    return v if isinstance(v, str) else str(v)


def _pooling(cfg):
    p = getattr(cfg, "pooling", None)
    return _text(getattr(p, "name", p)) if p is not None else None


def recognise(paths, tables, name_owner, backend):
    """Notes every TorchRec collection table among ``paths`` ([(qualified name, module)])
    that edo registered (``tables``: name -> Table; ``name_owner``: name -> weakref of module)."""
    global _backend
    _backend = backend
    try:
        _recognise(paths, tables, name_owner)
        _at_exit()
    except Exception:   # never break the job: the tables are still recorded, unnamed
        pass


def _recognise(paths, tables, name_owner):
    for n, m in paths:
        d = getattr(m, "__dict__", None)
        if not d:
            continue
        for cfg_attr, dict_attr in _COLLECTIONS:
            cfgs = d.get(cfg_attr)
            mods = getattr(m, "_modules", {}).get(dict_attr)
            if cfgs is None or mods is None or not isinstance(cfgs, (list, tuple)):
                continue
            children = getattr(mods, "_modules", {})
            for cfg in cfgs:
                cname = getattr(cfg, "name", None)
                if not isinstance(cname, str) or cname not in children:
                    continue
                child = children[cname]
                path = "%s.%s.%s" % (n, dict_attr, cname) if n else "%s.%s" % (dict_attr, cname)
                name = _name_of(path, child, tables, name_owner)
                if name is None:
                    continue
                features = getattr(cfg, "feature_names", None) or [cname]
                fact = _facts.get(name)
                if fact is None or fact["config"] != cname:
                    feats = [_text(f) for f in list(features)[:_MAX_FEATURES]]
                    fact = {"config": cname, "features": feats, "collection": type(m).__name__,
                            "pooling": _pooling(cfg), "bags": 0}
                    if dict_attr == "embedding_bags":
                        fact["feature_lookups"] = [0] * len(feats)
                        fact["feature_bags"] = [0] * len(feats)
                    _facts[name] = fact
                if dict_attr == "embedding_bags" and child not in _by_module:
                    _by_module[child] = name
                    names = _by_collection.get(m)
                    if names is None:
                        names = _by_collection[m] = []
                    if name not in names:
                        names.append(name)
                        _count_current_call(m, name)
                    _hook_forwards(child)
                _send(name)


def _hook_forwards(module):
    global _global_hook, _global_pre_hook
    if _global_hook is not None:
        return
    from torch.nn.modules import module as M
    reg = getattr(M, "register_module_forward_hook", None)
    if reg is not None:
        _global_hook = reg(_count_bags)
        pre = getattr(M, "register_module_forward_pre_hook", None)
        if pre is not None:
            _global_pre_hook = pre(_call_begins)


def _call_begins(module, args):
    # torch reads its global pre-hooks when a call begins and its forward hooks when it ends: a
    # collection call whose beginning this saw is one the forward hook will end (and count).
    if module in _by_collection:
        _started[module] = _started.get(module, 0) + 1
    return None


def _count_bags(module, args, output):
    # The output of an EmbeddingBag is (bags, dim): its first size is the bags pooled.
    try:
        name = _by_module.get(module)
        if name is not None:
            _facts[name]["bags"] += int(output.shape[0])
            return None
        names = _by_collection.get(module)
        if names is None:
            return None
        begun = _started.get(module, 0)
        if begun > 0:
            _started[module] = begun - 1
        if (begun > 0 or _global_pre_hook is None) and args:
            _count_features(names, args[0])
    except Exception:
        pass
    return None


def _count_current_call(collection, name):
    """Recognition happens inside the collection's first forward (at its first lookup), which
    began before the hooks existed: torch calls no pre-hook for it, so the forward hook (should
    torch call it at all) does not count it, and it is counted here, from the first argument of
    the collection's forward frame on the stack. Without a global pre-hook (an old torch) only the
    hook counts, from the next call on."""
    if _global_pre_hook is None and _global_hook is not None:
        return
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        if code.co_name == "forward" and code.co_argcount >= 2 and f.f_locals.get(code.co_varnames[0]) is collection:
            kjt = f.f_locals.get(code.co_varnames[1])
            if kjt is not None and hasattr(kjt, "keys") and hasattr(kjt, "stride"):
                _count_features([name], kjt)
            return
        f = f.f_back


def _lengths_per_key(kjt):
    """The ids of each key of a KeyedJaggedTensor: the cached list when its forward already
    computed it (to_dict does), else length_per_key() (which computes and caches it)."""
    cached = getattr(kjt, "length_per_key_or_none", None)
    lpk = cached() if cached is not None else None
    return lpk if lpk is not None else kjt.length_per_key()


def _count_features(names, kjt):
    keys = list(kjt.keys())
    lpk = _lengths_per_key(kjt)
    vsk = getattr(kjt, "variable_stride_per_key", None)
    strides = kjt.stride_per_key() if vsk is not None and vsk() else [kjt.stride()] * len(keys)
    at = {k: i for i, k in enumerate(keys)}
    for name in names:
        fact = _facts.get(name)
        if fact is None or "feature_lookups" not in fact:
            continue
        for j, f in enumerate(fact["features"]):
            i = at.get(f)
            if i is not None:
                fact["feature_lookups"][j] += int(lpk[i])
                fact["feature_bags"][j] += int(strides[i])


def _send(name):
    if _backend is None:
        return
    note = getattr(_backend, "note", None)
    if note is None:
        return
    text = json.dumps(_facts[name], sort_keys=True)
    if _sent.get(name) == text:
        return
    _sent[name] = text
    note("torchrec.table." + name, text)


def flush():
    """Sends every table's note again (the bags counted since)."""
    for name in list(_facts):
        try:
            _send(name)
        except Exception:
            pass


def _at_exit():
    global _exit_registered
    if _exit_registered or not _facts:
        return
    import atexit
    atexit.register(flush)
    _exit_registered = True


def reset():
    global _global_hook, _global_pre_hook
    if _global_hook is not None:
        _global_hook.remove()
        _global_hook = None
    if _global_pre_hook is not None:
        _global_pre_hook.remove()
        _global_pre_hook = None
    _facts.clear()
    _sent.clear()
    _by_module.clear()
    _by_collection.clear()
    _started.clear()
