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
a forward hook: one int per call, no copy, no sync); the export divides the recorded lookups
by it for TorchRec's ``pooling_factors``. It is sent again at exit. The hook is a global one
(``register_module_forward_hook``), put in place only once a collection is found: nothing is
added to the job's modules, so a pickled model never refers to edo.

Recognition is by shape (the attributes above), not by class: torchrec is never imported.
"""

import json
import weakref

_COLLECTIONS = (("_embedding_bag_configs", "embedding_bags"), ("_embedding_configs", "embeddings"))
_MAX_FEATURES = 1024

_facts = {}        # edo table name -> dict (the note's value)
_sent = {}         # edo table name -> the JSON last sent
_by_module = weakref.WeakKeyDictionary()   # EmbeddingBag module -> edo table name
_backend = None
_exit_registered = False
_global_hook = None   # the handle of the global forward hook, once a collection is found


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
                    fact = {"config": cname, "features": [_text(f) for f in list(features)[:_MAX_FEATURES]],
                            "collection": type(m).__name__, "pooling": _pooling(cfg), "bags": 0}
                    _facts[name] = fact
                if dict_attr == "embedding_bags" and child not in _by_module:
                    _by_module[child] = name
                    _hook_forwards(child)
                _send(name)


def _hook_forwards(module):
    global _global_hook
    if _global_hook is not None:
        return
    from torch.nn.modules import module as M
    reg = getattr(M, "register_module_forward_hook", None)
    if reg is not None:
        _global_hook = reg(_count_bags)


def _count_bags(module, args, output):
    # The output of an EmbeddingBag is (bags, dim): its first size is the bags pooled.
    try:
        name = _by_module.get(module)
        if name is not None:
            _facts[name]["bags"] += int(output.shape[0])
    except Exception:
        pass
    return None


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
    global _global_hook
    if _global_hook is not None:
        _global_hook.remove()
        _global_hook = None
    _facts.clear()
    _sent.clear()
    _by_module.clear()
