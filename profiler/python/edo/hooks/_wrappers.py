"""Where edo's counting is attached to torch: the hook functions a module calls (the patched
class ``forward`` with the hook in the instance's ``__dict__``, or a forward pre-hook), the
one-shot first-call pre-hook, and the ``torch.nn.functional`` wrappers. Eager calls go to
_counting; calls traced by torch.compile / torch.export to _compiled's operator.
"""

import functools
import types
import weakref

from . import _compiled
from . import _fastcount
from ..runtime import _state
from ._counting import EdoPreHook, functional_body, pre_hook_body
from ..runtime._state import R


def make_hook(hs):
    """The function registered as ``hs``'s module's forward pre-hook (a closure: not picklable,
    like the hook state), or kept in its ``__dict__`` for wrap_forward's forward, which passes
    ``direct=True`` (returned True: counted, run torch's forward without edo's functional
    wrapper). As a pre-hook it returns None (anything else would replace the forward's args)."""
    count_eager = hs.count_eager

    def _edo_pre_hook(module, args, direct=False):
        if not R.enabled:
            return None
        compiling = R.compiling
        if compiling is not None and compiling():
            if R.op is not None:
                return _compiled.traced_hook(hs.key, module, args)
            return R.hook_impl(module, args)
        if compiling is None and R.hook_impl is not pre_hook_body:
            return R.hook_impl(module, args)   # torch 2.0-2.2 after torch.compile: as before
        if not args:
            return count_eager(module, None)
        return count_eager(module, args[0], args[1] if len(args) > 1 else None, direct)
    _edo_pre_hook._edo_hook = hs
    _edo_pre_hook._edo_fast = hs.fast   # wrap_forward's forward hands it to _fastcount.count
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


def wrap_forward(orig, functional, fname):
    """``nn.Embedding.forward`` / ``nn.EmbeddingBag.forward`` with edo's hook called first.

    A forward pre-hook moves torch's ``Module.__call__`` off its no-hook fast path (on torch 2.x
    that alone costs about 2 us a call); a module whose class runs this forward keeps its hook
    in its own ``__dict__`` instead and torch's fast path stays. A subclass that overrides
    forward gets a real pre-hook (install_hook): its forward may never come here.

    Once the hook has counted an eager call, torch's forward runs as ``direct`` (its own code,
    calling torch's original ``functional.FNAME``): edo's functional wrapper, which would only
    find the call already counted, costs nothing then (0.4-0.9 us a call). That holds while
    ``functional.FNAME`` is still edo's wrapper (installed before this is called); a function
    another tool put there since is called through ``orig``, as before.

    Before the hook, a direct call goes to _fastcount's C function where this torch has one
    (R.fast_compiling): it counts the common eager call without running Python code, or leaves
    it to the hook. Asking ``compiling()`` first keeps torch.compile from tracing it (the C
    function reads the compile flag and ``functional.fname`` itself: _fastcount._compile_gate)."""
    wrapper = getattr(functional, fname)
    direct = _direct_forward(orig, functional)
    fast = _fastcount.count

    @functools.wraps(orig)
    def forward(self, *args, **kwargs):
        hook = self._edo_hook
        if hook is not None:
            if direct is not None:
                compiling = R.fast_compiling
                # count() checks that functional.fname is still wrapper itself (in C)
                if (compiling is not None and not compiling()
                        and fast(hook._edo_fast, self, args, functional, fname, wrapper)):
                    # no **{}: one dict fewer to build and unpack in the common call
                    return direct(self, *args, **kwargs) if kwargs else direct(self, *args)
                if getattr(functional, fname) is wrapper:
                    if hook(self, args, True) is True:
                        return direct(self, *args, **kwargs)
                else:
                    hook(self, args)
            else:
                hook(self, args)
        return orig(self, *args, **kwargs)
    forward._edo_original = orig
    return forward


class _Unwrapped(object):
    """``F`` in a direct forward's globals: torch.nn.functional with ``embedding`` and
    ``embedding_bag`` resolved to torch's originals (every other name read from F itself)."""

    def __init__(self, functional):
        self._functional = functional
        for name in ("embedding", "embedding_bag"):
            f = getattr(functional, name)
            setattr(self, name, getattr(f, "_edo_original", f))

    def __getattr__(self, name):
        return getattr(self._functional, name)


def _direct_forward(orig, functional):
    """torch's ``orig`` forward as a function of the same code whose globals are its module's
    (a copy taken now) with ``F`` an _Unwrapped; None when orig does not read ``F`` as
    torch.nn.functional (then every call goes through orig)."""
    code = getattr(orig, "__code__", None)
    g = getattr(orig, "__globals__", None)
    if code is None or g is None or g.get("F") is not functional or "F" not in code.co_names:
        return None
    g = dict(g)
    g["F"] = _Unwrapped(functional)
    f = types.FunctionType(code, g, orig.__name__, orig.__defaults__, orig.__closure__)
    f.__kwdefaults__ = orig.__kwdefaults__
    return f


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
                return _compiled.traced_functional(orig, input, weight, args, kwargs)
            elif _state.S.by_base:
                R.functional_impl(name, input, weight, offsets)
        return orig(input, weight, *args, **kwargs)
    wrapper._edo_original = orig
    return wrapper
