"""The common eager forward of nn.Embedding / nn.EmbeddingBag counted in C (issue 32: the
per-call cost), by edo.runtime._fastlookup.count (profiler/python/fastlookup/fastcount.c).

Each module's hook state (_counting.EdoPreHook) holds a ``Record``. The Python path
(``count_eager``) counts a call, then arms the record with what it checked (the backend, the
state object and its generation, the weight and its pointer) and what it wrote to (the table,
its activation entry in _family). The patched forward (_wrappers.wrap_forward) calls
``count(record, module, args)`` first: it re-checks all of that, counts the call and does the
activation accounting the Python path would have done, or returns False untouched (not armed,
not the common case, state changed) and the Python path runs as before.

Used only where nothing else has to see the call: the C module was built, the backend is the
native library reached through that module, torch.compile cannot be tracing (torch >= 2.3, whose
``torch.compiler.is_compiling`` the forward asks first, or a torch without dynamo), and the
first steps' dense-use checks are over (_facts).
"""

from ..facts import _family
from ..runtime._state import R

try:
    from ..runtime import _fastlookup
except ImportError:   # built without Python.h: the Python path does everything
    _fastlookup = None

count = _fastlookup.count if _fastlookup is not None else None


def install(torch, state_module, on_failure):
    """At patch(): binds the C side to this torch and sets ``R.fast_compiling``, the check the
    forward makes before ``count`` (None: no fast path here)."""
    R.fast_compiling = None
    if _fastlookup is None:
        return
    if R.compiling is not None:
        gate = R.compiling   # dynamo folds it to True while tracing: count is never traced
    elif int(torch.__version__.split(".")[0]) < 2:
        gate = False.__bool__   # torch 1.x: nothing traces Python code (a C call: no frame)
    else:
        return   # torch 2.0-2.2: the hooks run under torch._dynamo.disable (_patches)
    _fastlookup.bind_hooks(R, state_module, torch.Tensor, torch.strided, torch.int64, torch.int32,
                           torch.is_grad_enabled, on_failure)
    R.fast_compiling = gate


def new_record():
    """A disarmed Record for one module's hook, or None without the C module."""
    return _fastlookup.Record() if _fastlookup is not None else None


def arm(record, state, st, weight, bag):
    """After the Python path counted a direct call of the module (ModState ``st``, checked
    against ``weight`` just now): lets ``count`` take the next ones while nothing changes."""
    b = R.backend
    if (R.fast_compiling is None or state.dense_checks_left > 0
            or getattr(b, "table_lookup", None) is not _fastlookup.lookup):
        return
    tab = st.table
    a = _family.act_entry(tab, weight)
    record.arm(b, state, state.generation, weight, st.ptr, tab, tab.handle, a, a[5], bag)
