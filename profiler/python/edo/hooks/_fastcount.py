"""The common eager forward of nn.Embedding / nn.EmbeddingBag counted in C (issue 32: the
per-call cost), by edo.runtime._fastlookup.count (profiler/python/fastlookup/fastcount.c).

Each module's hook state (_counting.EdoPreHook) holds a ``Record``. The Python path
(``count_eager``) counts a call, then arms the record with what it checked (the backend, the
state object and its generation, the weight and its pointer) and what it wrote to (the table,
its activation entry in _family). The patched forward (_wrappers.wrap_forward) calls
``count(record, module, args, functional, fname, wrapper)`` first: it re-checks all of that
(and that ``functional.fname`` is still edo's ``wrapper``, and no compile session runs), counts
the call and does the activation accounting the Python path would have done, or returns False
untouched (not armed, not the common case, state changed) and the Python path runs as before.

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
    flag_owner = None
    if R.compiling is not None:
        gate, flag_owner = _compile_gate(torch)   # dynamo folds it to True: count is never traced
    elif int(torch.__version__.split(".")[0]) < 2:
        gate = False.__bool__   # torch 1.x: nothing traces Python code (a C call: no frame)
    else:
        return   # torch 2.0-2.2: the hooks run under torch._dynamo.disable (_patches)
    _fastlookup.bind_hooks(R, state_module, torch.Tensor, torch.strided, torch.int64, torch.int32,
                           torch.is_grad_enabled, on_failure, flag_owner)
    R.fast_compiling = gate


# The only names torch.compiler.is_compiling may read for _compile_gate's cheaper check.
_IS_COMPILING_NAMES = frozenset(("torch", "jit", "is_scripting", "_is_compiling_flag"))


def _compile_gate(torch):
    """The function the forward calls before ``count`` (which must not run while dynamo traces
    the forward), and the module whose ``_is_compiling_flag`` count() reads (None: none).

    ``torch.compiler.is_compiling()`` is True while dynamo traces (it folds the call to True:
    torch/_dynamo/variables/torch.py, constant_fold_functions, torch 2.15) and, run eagerly, is
    ``_is_compiling_flag`` (torch/compiler/__init__.py: ``if torch.jit.is_scripting(): return
    False else: return _is_compiling_flag``; the flag is held by a compile or export session,
    _compile_session_context / _export's _compiling_state_context). Dynamo folds
    ``is_dynamo_compiling()`` to True as well, and run eagerly it is one frame returning False
    where is_compiling is two (it calls is_scripting): asking it and reading the flag in C gives
    the same answer for ~50 ns less a call. Only where is_compiling's code reads no other name
    (checked here); elsewhere the forward asks is_compiling itself."""
    comp = getattr(torch, "compiler", None)
    cheap = getattr(comp, "is_dynamo_compiling", None)
    code = getattr(R.compiling, "__code__", None)
    if (cheap is not None and code is not None and hasattr(comp, "_is_compiling_flag")
            and getattr(R.compiling, "__globals__", None) is vars(comp)
            and set(code.co_names) <= _IS_COMPILING_NAMES):
        return cheap, comp
    return R.compiling, None


def new_record():
    """A disarmed Record for one module's hook, or None without the C module."""
    return _fastlookup.Record() if _fastlookup is not None else None


def arm(record, state, st, weight, bag, module):
    """After the Python path counted a direct call of the module (ModState ``st``, checked
    against ``weight`` just now): lets ``count`` take the next ones while nothing changes."""
    b = R.backend
    if (R.fast_compiling is None or state.dense_checks_left > 0
            or getattr(b, "table_lookup", None) is not _fastlookup.lookup
            or not _dict_reads_hold(type(module))):
        return
    tab = st.table
    a = _family.act_entry(tab, weight)
    record.arm(b, state, state.generation, weight, st.ptr, tab, tab.handle, a, a[5], bag)


# What count() reads from the module's instance dict (fastcount.c, module_instance_attr).
_DICT_READS = ("_parameters", "include_last_offset")


def _dict_reads_hold(cls):
    """A read from the instance dict is what getattr returns: no class in cls's MRO defines a
    data descriptor (a property, a slot) of those names, which would come first."""
    for name in _DICT_READS:
        for k in cls.__mro__:
            d = k.__dict__.get(name)
            if d is not None:
                t = type(d)
                if hasattr(t, "__set__") or hasattr(t, "__delete__"):
                    return False
                break
    return True
