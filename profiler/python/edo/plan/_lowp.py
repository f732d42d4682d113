"""Low-precision training tables the way FBGEMM trains them: fp16/bf16 weights, the optimizer's
state in fp32, each update written back into the low-precision weight with stochastic rounding.

``edo.apply_plan`` casts a training table planned as fp16/bf16 in place and registers its weight
here. The job's own optimizer (Adam, AdamW, Adagrad, SGD, ...) then runs as usual; around its
``step()`` the registered parameters are given an fp32 view (``param.data`` an fp32 copy of the
weights, ``param.grad`` an fp32 copy of the gradient), so every state tensor the optimizer creates
or updates is fp32; after the step the fp32 result is stochastically rounded into the original
fp16/bf16 storage (same data pointer: ties and edo's registration keep it) and the gradient is
put back. What persists is what FBGEMM keeps: fp16/bf16 weights, fp32 optimizer state, the
gradient in the weight's dtype. The fp32 copies live only during the step (a transient of a
few 4-byte tensors the size of the table: weights, gradient, the rounding's random bits).

Why not a plain cast: the optimizer would keep its state in fp16, where Adagrad's eps (1e-10) is 0
and small squared gradients underflow: the loss turns to NaN (and torch 1.13's CPU Adagrad has
no fp16 kernel at all). Why stochastic rounding: an update smaller than half an fp16 step would
be lost by round-to-nearest every time; rounded stochastically it lands on average.

Where the step is caught: PyTorch 2.x's global optimizer step pre/post hooks; torch 1.13 has none,
so each optimizer class's ``step`` is wrapped when its first instance is built (and the classes
of optimizers alive at install time). A learning-rate scheduler built in 1.13 before ``install()``
captured the unwrapped step: install before building optimizers (``edo record --apply-plan``
does, at ``import torch``).
"""

import functools
import gc
import sys
import threading
import weakref

_lock = threading.RLock()
_params = {}   # id(Parameter) -> (weakref to it, its low-precision dtype); tensors compare by value
_active = weakref.WeakKeyDictionary()   # optimizer -> [(param, low-precision data, grad, fp32 grad)]
_generators = {}                        # device -> torch.Generator of the rounding bits
_installed = []
_tls = threading.local()
ROUNDINGS = ("stochastic", "nearest")
_torch = None


def _t():
    global _torch
    if _torch is None:
        import torch
        _torch = torch
    return _torch


# ---- stochastic rounding -----------------------------------------------------------------

def _generator(device):
    """One generator per device, seeded from torch's seed: rounding is deterministic given the
    job's seeding, and the job's own random stream is not consumed."""
    torch = _t()
    key = str(device)
    g = _generators.get(key)
    if g is None:
        g = torch.Generator(device=device)
        g.manual_seed(torch.initial_seed() ^ 0x5EED)
        _generators[key] = g
    return g


def stochastic_round(x, dtype, generator=None):
    """``x`` rounded to ``dtype`` (float16 or bfloat16) up or down at random, with the probability
    of rounding up equal to the distance from the lower neighbour: E[result] = x.

    Uniform random bits are added below the target's last mantissa bit of the fp32 pattern and
    the bits below it cut off. fp16 keeps 10 of fp32's 23 mantissa bits (13 cut); below fp16's
    smallest normal number (2^-14) its spacing is a fixed 2^-24, rounded there as
    floor(|x| * 2^24 + u) * 2^-24. bf16 keeps fp32's exponent, so 16 bits cut is exact everywhere.
    NaN and infinities stay as they are."""
    torch = _t()
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError("stochastic_round: float16 or bfloat16, not %s" % dtype)
    x = x.detach().float().contiguous()
    drop = 16 if dtype == torch.bfloat16 else 13
    if generator is None:
        generator = _generator(x.device)
    r = torch.randint(0, 1 << drop, x.shape, dtype=torch.int32, device=x.device, generator=generator)
    bits = x.view(torch.int32)
    out = ((bits + r) & -(1 << drop)).view(torch.float32)
    if dtype == torch.float16:
        u = r.float() * (1.0 / (1 << drop))
        sub = torch.floor(x.abs() * 2.0 ** 24 + u) * 2.0 ** -24
        out = torch.where(x.abs() < 2.0 ** -14, torch.copysign(sub, x), out)
    out = torch.where(torch.isfinite(x), out, x)
    return out.to(dtype)


# ---- registry ------------------------------------------------------------------------------

def register(param, rounding="stochastic"):
    """Trains ``param`` (already cast to fp16/bf16) with fp32 optimizer state from now on, each
    update rounded into it stochastically (or to nearest: ``rounding="nearest"``)."""
    if rounding not in ROUNDINGS:
        raise ValueError("rounding %r is not one of %s" % (rounding, ", ".join(ROUNDINGS)))
    key = id(param)
    with _lock:
        _params[key] = (weakref.ref(param, lambda _r, k=key: _params.pop(k, None)), param.dtype, rounding)
    install()


def unregister(param):
    with _lock:
        _params.pop(id(param), None)


def _entry(param):
    e = _params.get(id(param))
    if e is None or e[0]() is not param:
        return None
    return e


def _dtype_of(param):
    e = _entry(param)
    return e[1] if e is not None else None


def registered(param):
    return _dtype_of(param) is not None


# ---- around the optimizer's step ---------------------------------------------------------

def _lowp_params(opt):
    out = []
    for g in getattr(opt, "param_groups", ()):
        for p in g.get("params", ()):
            dt = _dtype_of(p)
            if dt is not None:
                out.append((p, dt))
    return out


def enter(opt, closure=False):
    """Gives ``opt``'s low-precision parameters an fp32 view for its step."""
    if not _params:
        return
    torch = _t()
    with _lock:
        if opt in _active:
            leave(opt)   # a step that raised last time: its view was never taken back
        views = []
        for p, dt in _lowp_params(opt):
            g = p.grad
            if p.dtype != dt or (g is None and not closure):
                continue   # nothing to update (the optimizer skips it), or already viewed
            low = p.data
            with torch.no_grad():
                g32 = g.float() if g is not None else None
                p.grad = None
                p.data = low.float()
                p.grad = g32
            st = opt.state.get(p) if hasattr(opt.state, "get") else None
            if st:
                # State made while the weight was low precision (an optimizer built after the
                # cast: Adagrad creates its sum in __init__): fp32 from now on.
                for k, v in list(st.items()):
                    if isinstance(v, torch.Tensor) and v.dtype == dt:
                        st[k] = v.float()
            views.append((p, low, g, g32))
        if views:
            _active[opt] = views


def leave(opt):
    """Writes the step's fp32 result back into the low-precision weights (stochastically rounded)
    and puts the gradient back."""
    with _lock:
        views = _active.pop(opt, None)
    if not views:
        return
    torch = _t()
    for p, low, g, g32 in views:
        with torch.no_grad():
            new = p.data
            if new is not low:
                e = _entry(p)
                if e is not None and e[2] == "nearest":
                    low.copy_(new)   # round to nearest even
                else:
                    low.copy_(stochastic_round(new, low.dtype))
            after = p.grad
            p.grad = None
            p.data = low
            if after is g32:
                p.grad = g
            elif after is not None:   # a closure computed a new gradient during the step
                p.grad = after.to(low.dtype)


def _compiling():
    dyn = sys.modules.get("torch._dynamo")   # not loaded: nothing is being compiled
    if dyn is None:
        return False
    f = getattr(getattr(_t(), "compiler", None), "is_compiling", None) or getattr(dyn, "is_compiling", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False


def eager(fn):
    """``fn``, run eagerly when dynamo traces it (a dynamo-disabled call: a graph break), for
    hooks that move parameters between tensors or apply a plan. torch._dynamo is imported only
    when something is being compiled (importing it costs seconds)."""
    disabled = []

    def wrapper(*args):
        if not _compiling():
            return fn(*args)
        if not disabled:
            dis = getattr(getattr(_t(), "compiler", None), "disable", None) or sys.modules["torch._dynamo"].disable
            disabled.append(dis(fn))
        return disabled[0](*args)
    return wrapper


def _pre_hook(opt, args, kwargs):
    enter(opt, bool(args) or bool(kwargs and kwargs.get("closure") is not None))


def _post_hook(opt, args, kwargs):
    leave(opt)


def _wrap_class(cls):
    step = cls.__dict__.get("step")
    if step is None or getattr(step, "_edo_lowp", False):
        return

    @functools.wraps(step)
    def wrapped(self, *args, **kwargs):
        # Only the outermost step of a class chain (a subclass's step calling super().step())
        # takes the view and gives it back.
        if not _params or getattr(_tls, "depth", 0):
            return step(self, *args, **kwargs)
        _tls.depth = 1
        try:
            enter(self, bool(args) or kwargs.get("closure") is not None)
            return step(self, *args, **kwargs)
        finally:
            _tls.depth = 0
            leave(self)
    wrapped._edo_lowp = True
    cls.step = wrapped


def _patch_grad_scaler(torch):
    """AMP's GradScaler refuses to unscale fp16 gradients ("Attempting to unscale FP16
    gradients"): an optimizer holding a table trained here has them by design (FBGEMM's fp16
    tables keep fp16 gradients too), so they are unscaled in place like the others (an overflow
    shows as inf and the step is skipped, as AMP intends)."""
    for owner in (getattr(getattr(torch, "amp", None), "GradScaler", None),
                  getattr(getattr(getattr(torch, "cuda", None), "amp", None), "GradScaler", None)):
        orig = getattr(owner, "__dict__", {}).get("_unscale_grads_") if owner is not None else None
        if orig is None or getattr(orig, "_edo_lowp", False):
            continue

        def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16, __orig=orig):
            if not allow_fp16 and _params and _lowp_params(optimizer):
                allow_fp16 = True
            return __orig(self, optimizer, inv_scale, found_inf, allow_fp16)
        _unscale_grads_._edo_lowp = True
        owner._unscale_grads_ = _unscale_grads_


def install():
    """Hooks the optimizers' steps (once per process). Never raises."""
    if _installed:
        return
    with _lock:
        if _installed:
            return
        _installed.append(True)
        torch = _t()
        import importlib
        _patch_grad_scaler(torch)
        optmod = importlib.import_module("torch.optim.optimizer")
        pre = getattr(optmod, "register_optimizer_step_pre_hook", None)
        post = getattr(optmod, "register_optimizer_step_post_hook", None)
        if pre is not None and post is not None:
            pre(eager(_pre_hook))
            post(eager(_post_hook))
            return
        Opt = torch.optim.Optimizer
        orig_init = Opt.__init__

        @functools.wraps(orig_init)
        def __init__(self, *args, **kwargs):
            orig_init(self, *args, **kwargs)
            for cls in type(self).__mro__:
                if cls is Opt:
                    break
                _wrap_class(cls)
        Opt.__init__ = __init__
        for o in gc.get_objects():
            if issubclass(type(o), Opt):
                for cls in type(o).__mro__:
                    if cls is Opt:
                        break
                    _wrap_class(cls)
