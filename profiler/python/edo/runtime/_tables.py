"""The registry of tables: registration with the tracer, ties, lookup by data pointer.

A name arrives here decided (``_naming.table_name``); registration only makes it unique when
another tensor already holds it (a second model of the same layout: ``name#2``; the same name
with another shape or dtype, e.g. ``model.half()`` after a forward: ``name#2``).
"""

import weakref

from . import _native
from . import _state
from ._state import R, Table


def dtype_code(dt):
    t = R.torch
    m = {t.float32: ("fp32", _native.F32), t.float16: ("fp16", _native.F16),
         t.bfloat16: ("bf16", _native.BF16), t.int8: ("int8", _native.I8),
         t.uint8: ("uint8", _native.U8)}
    f8 = getattr(t, "float8_e4m3fn", None)
    if f8 is not None:
        m[f8] = ("fp8_e4m3", _native.F8E4M3)
    return m.get(dt)


def weight_of(m):
    """The module's weight: a Parameter, or a plain tensor attribute (DataParallel replicas)."""
    params = getattr(m, "_parameters", None)
    w = params.get("weight") if params else None
    if w is None:
        w = m.__dict__.get("weight")
    return w if isinstance(w, R.torch.Tensor) else None


def safe_ptr(w):
    try:
        return w.data_ptr()
    except Exception:
        return 0


def _free_name(name):
    s = _state.S
    k = 2
    while ("%s#%d" % (name, k)) in s.tables:
        k += 1
    return "%s#%d" % (name, k)


def register_weight(name, weight, module=None):
    """Registers ``weight`` (a 2-D tensor) as table ``name``; returns the Table or None.

    A weight whose data pointer already belongs to a table is registered under the new
    name on the same base pointer, which the tracer records as a tie."""
    s = _state.S
    t = R.torch
    if not isinstance(weight, t.Tensor) or weight.dim() != 2:
        return None
    dev = weight.device.type
    if dev == "cpu":
        device = _native.HOST
    elif dev == "cuda":
        device = _native.CUDA
    else:
        _state.warn("device:" + dev, "table %s is on device '%s', which edo does not trace; "
                    "skipped" % (name, dev))
        return None
    code = dtype_code(weight.dtype)
    if code is None:
        _state.warn("dtype:" + str(weight.dtype), "table %s has dtype %s, which edo does not "
                    "record; skipped" % (name, weight.dtype))
        return None
    try:
        base = weight.data_ptr()
    except Exception:
        return None
    if base == 0:
        return None
    rows, dim = int(weight.shape[0]), int(weight.shape[1])
    owner = s.by_base.get(base)
    if owner is not None and owner.weight_ref() is None:
        owner = None   # the old tensor is gone, the memory was reused
    tied_to = None
    if owner is not None and owner.name != name:
        tied_to = owner.name
        base = owner.base
    # Make the name unique among different tensors: a second model with the same layout.
    prev = s.tables.get(name)
    if prev is not None and prev.base != base and module is not None:
        prev_mod = s.name_owner.get(name)
        prev_mod = prev_mod() if prev_mod is not None else None
        if prev_mod is not None and prev_mod is not module:
            name = _free_name(name)
    b = _state.backend()
    h = b.table_register(name, base, rows, dim, code[1], device)
    if h == -6 and prev is not None:
        name = _free_name(name)
        h = b.table_register(name, base, rows, dim, code[1], device)
    if h < 0:
        _state.warn("register:%d" % h, "cannot register table %s: %s" % (name, b.strerror(int(h))))
        return None
    tab = Table(name, int(h), base, rows, dim, code[0],
                "cuda" if device == _native.CUDA else "host", tied_to, weight)
    if prev is not None and prev.base in s.by_base and s.by_base[prev.base] is prev:
        del s.by_base[prev.base]   # the table moved (model.to(...)): forget the old pointer
    s.tables[name] = tab
    tab.key = len(s.table_list)
    s.table_list.append(tab)
    if owner is None:
        s.by_base[base] = tab
    if module is not None:
        s.name_owner[name] = weakref.ref(module)
    s.generation += 1
    return tab


def table_for_weight(weight):
    """The registered owner table whose base is ``weight``'s data pointer, or None."""
    try:
        tab = _state.S.by_base.get(weight.data_ptr())
    except Exception:
        return None
    if tab is None or tab.weight_ref() is None:
        return None
    return tab


def owner_of(tab):
    if tab.tied_to is not None:
        return _state.S.tables.get(tab.tied_to, tab)
    return tab


def tensor_bytes(v):
    """Bytes a tensor holds (a sparse one: its values and indices); 0 when unknown."""
    try:
        if v.is_sparse:
            return (v._values().numel() * v._values().element_size()
                    + v._indices().numel() * v._indices().element_size())
        return v.numel() * v.element_size()
    except Exception:
        return 0
