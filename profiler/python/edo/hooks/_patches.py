"""Patches: what edo changes in the imported torch (and how it is undone).

  * ``nn.Embedding`` / ``nn.EmbeddingBag`` ``__init__`` (and ``__setstate__``): every new
    instance, subclasses included, gets edo's hook (``_counting.EdoPreHook``): kept in the
    instance's ``__dict__`` and called by the class's patched ``forward`` (torch's no-hook fast
    path of ``Module.__call__`` stays), or registered as a forward pre-hook for a subclass that
    overrides ``forward``. ``__getstate__`` leaves the hook out, so pickled / deep-copied
    models never reference edo. Pickled for another process (``multiprocessing``'s ForkingPickler: spawn-context
    DataLoader workers, torch.multiprocessing queues) the state also carries the table's name
    here, so that the other process names the same table alike; a checkpoint (``torch.save``,
    ``pickle``) carries nothing of edo.
  * ``torch.nn.functional.embedding`` / ``embedding_bag``: direct calls on registered tables.
  * the optimizer post-step hook (``_optim``).
  * ``torch.jit.script``: our hooks are taken off while a module is scripted (TorchScript
    cannot compile them); a scripted module is not counted.
  * ``torch.compile`` / ``torch.export``: the hooks put edo's counting operator
    (``torch.ops.edo.lookup``, _compiled) into the graph: exact counts, no graph break,
    ``fullgraph=True`` included. On torch 2.0-2.3 (no ``torch.library.custom_op``) hook bodies
    become ``torch._dynamo.disable``d (graph breaks that run eagerly), and with
    ``fullgraph=True`` lookups inside compiled graphs are not counted (one warning says so).
  * ``torch.profiler`` tracing CUDA: edo hands CUPTI over first.
  * ``torch.Tensor.backward`` / ``torch.autograd.backward`` (and ``GradScaler.scale``): the loss
    of each step (``_loss``), read without a device synchronisation.
  * under ``edo record --apply-plan`` (EDO_APPLY_PLAN): the optimizers' steps (``_lowp``) and a
    global forward pre-hook that applies the plan at the first forward (``_trial``).
"""

import collections
import functools
import sys
import threading

from . import _compiled
from . import _counting
from . import _fastcount
from . import _wrappers
from ..facts import _loss
from . import _naming
from . import _optim
from ..runtime import _state
from ..runtime import _tables
from . import _trial
from ..facts import _weights
from ..runtime._state import R

_tls = threading.local()   # per-thread call depths (optimizer step, jit.script), pickling flag

# The key under which a module pickled for another process carries its table's name.
NAME_KEY = "_edo_table_name"


def _on_new_module(module, carried=None):
    try:
        _naming.on_new_module(module, carried)
        if R.enabled:
            _wrappers.install_hook(module)
    except Exception as e:
        _state.internal_error("module creation", e)


def _patch_class(cls, functional, fname):
    orig_init = cls.__dict__["__init__"]

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        _on_new_module(self)

    orig_set = cls.__dict__.get("__setstate__")

    def __setstate__(self, state):
        carried = None
        if isinstance(state, dict) and NAME_KEY in state:
            state = dict(state)
            carried = state.pop(NAME_KEY)
        if orig_set is not None:
            orig_set(self, state)
        else:
            super(cls, self).__setstate__(state)
        _on_new_module(self, carried if isinstance(carried, str) else None)

    orig_get = cls.__dict__.get("__getstate__")

    def __getstate__(self):
        if orig_get is not None:
            state = orig_get(self)
        else:
            sup = getattr(super(cls, self), "__getstate__", None)
            state = sup() if sup is not None else self.__dict__
        if not isinstance(state, dict):
            return state
        if _wrappers.HOOK_ATTR in state:
            state = dict(state)
            del state[_wrappers.HOOK_ATTR]
        hooks = state.get("_forward_pre_hooks")
        if hooks and any(isinstance(h, _counting.EdoPreHook) for h in hooks.values()):
            state = dict(state)
            state["_forward_pre_hooks"] = collections.OrderedDict(
                (k, h) for k, h in hooks.items() if not isinstance(h, _counting.EdoPreHook))
        if getattr(_tls, "cross_process", 0) and R.enabled:
            try:
                with R.lock:
                    name = _naming.name_for_pickling(self)
                state = dict(state)
                state[NAME_KEY] = name
            except Exception as e:
                _state.internal_error("naming a table for another process", e)
        return state

    orig_forward = cls.__dict__["forward"]
    R.orig[(cls, "forward")] = orig_forward
    R.orig[(cls, _wrappers.HOOK_ATTR)] = None   # unpatch() deletes the class default
    setattr(cls, _wrappers.HOOK_ATTR, None)
    cls.forward = _wrappers.wrap_forward(orig_forward, functional, fname)
    R.orig[(cls, "__init__")] = orig_init
    R.orig[(cls, "__setstate__")] = orig_set
    R.orig[(cls, "__getstate__")] = orig_get
    cls.__init__ = __init__
    cls.__setstate__ = __setstate__
    cls.__getstate__ = __getstate__


def _patch_forking_pickler():
    """Marks pickling for another process (multiprocessing.reduction.ForkingPickler.dump)."""
    red = sys.modules.get("multiprocessing.reduction")
    FP = getattr(red, "ForkingPickler", None) if red is not None else None
    if FP is None or "dump" in FP.__dict__:
        return
    base_dump = FP.dump

    def dump(self, obj):
        _tls.cross_process = getattr(_tls, "cross_process", 0) + 1
        try:
            return base_dump(self, obj)
        finally:
            _tls.cross_process -= 1
    R.orig[(FP, "dump")] = None   # unpatch() deletes ours: the inherited one shows again
    FP.dump = dump


def _patch_fork_children():
    """multiprocessing children (fork) take their own exit snapshot of the weights."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None and _weights.wanted():
        util.register_after_fork(R, lambda _r: _weights.after_fork_child())


def _patch_optimizer(torch):
    optmod = sys.modules.get("torch.optim.optimizer")
    reg = getattr(optmod, "register_optimizer_step_post_hook", None) if optmod else None
    if reg is not None:
        R.orig["opt_handle"] = reg(lambda opt, args, kwargs: _optim.after_optimizer_step(opt))
        return
    Opt = torch.optim.Optimizer
    code = Opt.__dict__.get("_optimizer_step_code")
    if code is not None:
        def _optimizer_step_code(self):
            code(self)
            _optim.after_optimizer_step(self)
        R.orig[(Opt, "_optimizer_step_code")] = code
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
                        _optim.after_optimizer_step(self)
            cls.step = stepw
    R.orig[(Opt, "__init__")] = orig_init
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
        # the original functions, nn.Embedding / EmbeddingBag their own forward, and the
        # modules carry no edo hook.
        depth = getattr(_tls, "script_depth", 0)
        if depth:
            return orig(obj, *args, **kwargs)
        _tls.script_depth = 1
        removed = []
        swapped = []
        detached = []
        try:
            for cls in R.emb_classes:
                cur = cls.__dict__.get("forward")
                o = getattr(cur, "_edo_original", None)
                if o is not None:
                    cls.forward = o
                    swapped.append((cls, "forward", cur))
            for fname in ("embedding", "embedding_bag"):
                cur = getattr(F, fname)
                o = getattr(cur, "_edo_original", None)
                if o is not None:
                    setattr(F, fname, o)
                    swapped.append((F, fname, cur))
            if isinstance(obj, torch.nn.Module):
                for m in obj.modules():
                    h = m.__dict__.pop(_wrappers.HOOK_ATTR, None)
                    if h is not None:
                        detached.append((m, h))
                    hooks = m.__dict__.get("_forward_pre_hooks")
                    if hooks:
                        for k, h in list(hooks.items()):
                            if isinstance(h, _counting.EdoPreHook):
                                del hooks[k]
                                removed.append((hooks, k, h))
        except Exception as e:
            _state.internal_error("torch.jit.script", e)
        try:
            return orig(obj, *args, **kwargs)
        finally:
            for hooks, k, h in removed:
                hooks[k] = h
            for m, h in detached:
                m.__dict__[_wrappers.HOOK_ATTR] = h
            for owner, name, cur in swapped:
                setattr(owner, name, cur)
            _tls.script_depth = 0
    R.orig[(jit, "script")] = orig
    jit.script = script


def _not_while_compiling(fn):
    """fn, except while dynamo traces (then nothing: no graph break, nothing counted)."""
    comp = getattr(R.torch, "compiler", None)
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
    """torch.compile traces into module hooks. With edo's operator (torch >= 2.4, _compiled) the
    hooks put it into the graph: counted exactly, no graph break, fullgraph=True too; only the
    loss read in backward() (a graph break) stays out of fullgraph code. Without it (torch
    2.0-2.3) the hook bodies become graph breaks that run eagerly (torch._dynamo.disable):
    lookups are counted, at the cost of a break per lookup; with fullgraph=True a break is an
    error, so inside compiled graphs nothing is counted, and edo says so."""
    d = sys.modules.get("torch._dynamo")
    disable = getattr(d, "disable", None) if d is not None else None
    if disable is None:
        return
    try:
        if fullgraph:
            R.fullgraph_seen = True
        if R.op is not None:
            R.loss_impl = None if R.fullgraph_seen else disable(_loss.seen)
            return
        if fullgraph:
            if getattr(R.hook_impl, "_edo_mode", None) != "skip":
                R.hook_impl = _not_while_compiling(_counting.pre_hook_body)
                R.functional_impl = _not_while_compiling(_counting.functional_body)
                R.hook_impl._edo_mode = "skip"
                R.functional_impl._edo_mode = "skip"
                version = getattr(R.torch, "__version__", "?")
                _state.not_counted("fullgraph", "torch.compile(fullgraph=True) on torch %s: "
                                   "embedding lookups inside compiled graphs are not counted: edo "
                                   "counts them with a torch.library custom operator, which needs "
                                   "torch 2.4 or newer, and a graph break would be an error here "
                                   "(the compiled model's tables are registered, eager lookups "
                                   "counted)" % version)
        elif R.hook_impl is _counting.pre_hook_body:
            R.hook_impl = disable(_counting.pre_hook_body)
            R.functional_impl = disable(_counting.functional_body)
        R.loss_impl = None if getattr(R.hook_impl, "_edo_mode", None) == "skip" else disable(_loss.seen)
    except Exception as e:
        _state.internal_error("torch.compile support", e)


def _register_compiled_model(model):
    """torch < 2.4 under fullgraph=True: the hooks do nothing while the graph is traced, so the
    model's tables are registered now (its memory recorded, its name decided as at a first
    forward), not never."""
    if not R.enabled or not isinstance(model, R.torch.nn.Module):
        return
    try:
        for m in model.modules():
            if isinstance(m, R.emb_classes):
                w = _tables.weight_of(m)
                if w is not None:
                    _counting._module_state(m, w)
    except Exception as e:
        _state.internal_error("registering a compiled model's tables", e)


def _patch_compile(torch):
    orig = getattr(torch, "compile", None)
    if orig is None:
        return

    @functools.wraps(orig)
    def compile(*args, **kwargs):
        if args:
            _trial.before_compile(args[0])
        out = orig(*args, **kwargs)
        fullgraph = bool(kwargs.get("fullgraph", False))
        _dynamo_compat(fullgraph)
        if fullgraph and R.op is None and args:
            _register_compiled_model(args[0])
        return out
    R.orig[(torch, "compile")] = orig
    torch.compile = compile


def _release_gpu_capture(tool):
    s = _state.S
    if s.released:
        return
    s.released = True
    b = _state.backend()
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
        R.orig[(ap, fname)] = orig

        def wrapped(*args, __orig=orig, **kwargs):
            try:
                acts = args[1] if len(args) > 1 else kwargs.get("activities")
                if R.enabled and acts is not None and cuda in acts:
                    _release_gpu_capture("torch.profiler")
            except Exception as e:
                _state.internal_error("handing CUPTI over to torch.profiler", e)
            return __orig(*args, **kwargs)

        wrapped._edo_wrapped = True
        setattr(ap, fname, wrapped)



def _compiling():
    """True while dynamo traces (then our wrappers only call through)."""
    comp = getattr(R.torch, "compiler", None)
    f = getattr(comp, "is_compiling", None)
    if f is None:
        d = sys.modules.get("torch._dynamo")
        f = getattr(d, "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False


def _patch_backward(torch):
    """The loss of each step: the one-element tensor backward() is called on. Tensor.backward
    calls torch.autograd.backward: a per-thread depth records it once."""
    tb = torch.Tensor.backward

    @functools.wraps(tb)
    def backward(self, *args, **kwargs):
        if _compiling():
            # Traced by dynamo: the loss is read by a dynamo-disabled function (a graph break that
            # runs eagerly); under fullgraph=True (a break would be an error) it is not read.
            impl = R.loss_impl
            if impl is not None:
                impl(self)
            return tb(self, *args, **kwargs)
        if _loss.in_backward():
            return tb(self, *args, **kwargs)
        _loss.seen(self)
        _loss.enter_backward()
        try:
            return tb(self, *args, **kwargs)
        finally:
            _loss.leave_backward()
    R.orig[(torch.Tensor, "backward")] = tb
    torch.Tensor.backward = backward

    ab = torch.autograd.backward

    @functools.wraps(ab)
    def autograd_backward(tensors, *args, **kwargs):
        if _loss.in_backward() or _compiling():
            return ab(tensors, *args, **kwargs)
        t = tensors
        if isinstance(t, (list, tuple)):
            t = t[0] if len(t) == 1 else None
        if t is not None:
            _loss.seen(t)
        _loss.enter_backward()
        try:
            return ab(tensors, *args, **kwargs)
        finally:
            _loss.leave_backward()
    R.orig[(torch.autograd, "backward")] = ab
    torch.autograd.backward = autograd_backward

    # GradScaler.scale(loss) is what backward() is called on under AMP: remember the loss.
    amp = getattr(torch, "amp", None)
    scaler = getattr(amp, "GradScaler", None) if amp is not None else None
    if scaler is None or "scale" not in scaler.__dict__:
        scaler = getattr(getattr(torch.cuda, "amp", None), "GradScaler", None)
    if scaler is not None and "scale" in scaler.__dict__:
        orig_scale = scaler.__dict__["scale"]

        @functools.wraps(orig_scale)
        def scale(self, outputs):
            out = orig_scale(self, outputs)
            if R.enabled:
                _loss.remember_scaled(out, outputs)
            return out
        R.orig[(scaler, "scale")] = orig_scale
        scaler.scale = scale


def patch():
    """Installs the hooks into the imported torch. Idempotent; never raises."""
    if R.patched:
        return True
    if _state.env_disabled():
        R.enabled = False
        return False
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "nn"):
        return False
    with R.lock:
        if R.patched:
            return True
        try:
            R.torch = torch
            nn = torch.nn
            R.emb_classes = (nn.Embedding, nn.EmbeddingBag)
            F = torch.nn.functional
            for fname in ("embedding", "embedding_bag"):
                orig = getattr(F, fname)
                R.orig[(F, fname)] = orig
                setattr(F, fname, _wrappers.wrap_functional(fname, orig))
            for cls in R.emb_classes:   # after F: their forward calls torch's F directly (wrap_forward)
                _patch_class(cls, F, "embedding_bag" if cls is nn.EmbeddingBag else "embedding")
            _patch_optimizer(torch)
            _patch_jit(torch)
            _patch_compile(torch)
            _patch_profiler(torch)
            _patch_backward(torch)
            _trial.install(torch)
            _patch_forking_pickler()
            _patch_fork_children()
            comp = getattr(torch, "compiler", None)
            R.compiling = getattr(comp, "is_compiling", None)
            if R.compiling is not None:
                R.op = _compiled.register(torch)
            _fastcount.install(torch, _state, _counting._lookup_failed)
            _dynamo_compat()
            if _weights.wanted():
                _weights.ensure_exit_hooks()
            R.patched = True
        except Exception as e:
            _state.internal_error("patching torch", e)
            return False
    return True


def unpatch():
    """Undoes patch() (tests)."""
    with R.lock:
        for key, orig in list(R.orig.items()):
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
        R.orig.clear()
        if R.head_hook is not None:
            R.head_hook.remove()
            R.head_hook = None
        R.compiling = None
        R.fast_compiling = None
        R.op = None
        R.patched = False
