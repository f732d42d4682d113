"""The loss of every step (``pytorch.loss`` notes) and reading small device values without a sync.

The loss is the one-element tensor that ``backward()`` is called on (``Tensor.backward`` or
``torch.autograd.backward`` with one tensor); its step is the number of edo steps marked so far.
A CPU loss is read at once (``.item()`` of a CPU tensor waits for nothing). A CUDA loss is copied
asynchronously into pinned host memory on the current stream, and a CUDA event recorded after
the copy; the value is read once the event says the copy is done (polled at the next backward
or step, waited for only at exit), so the job's step never waits for the device. Nothing is
added while a CUDA graph is being captured, or while torch.compile traces. Other devices (XLA,
MPS) are not read: reading them would synchronise.

Values are batched: one note of ``step:loss`` pairs per ``BATCH`` steps, the rest at exit.
Several backward calls in one step (gradient accumulation) give several pairs with that step.
Under ``torch.cuda.amp.GradScaler`` the recorded loss is the one before ``scaler.scale()``.
"""

import atexit
import collections
import os
import sys
import threading

from ..runtime import _state
from ..runtime._state import R

BATCH = 32
MAX_NOTE = 60000   # bytes of one note (the protocol's limit is 60 KB)

_lock = threading.Lock()
_tls = threading.local()


class _Pending(object):
    """Values on their way from the device: (host buffer, event, callback)."""

    def __init__(self):
        self.items = collections.deque()

    def add(self, buf, event, callback):
        self.items.append((buf, event, callback))

    def poll(self, wait=False):
        """Hands every value whose copy is done to its callback (all of them when ``wait``)."""
        while self.items:
            buf, ev, cb = self.items[0]
            if not wait and not ev.query():
                return
            if wait:
                ev.synchronize()
            self.items.popleft()
            try:
                cb(buf.item())
            except Exception as e:
                _state.internal_error("reading a device value", e)


PENDING = _Pending()


def read_later(t, callback):
    """Calls ``callback(float)`` with the value of one-element tensor ``t``: now on the CPU, after
    an asynchronous copy on CUDA. Returns False when it is not read (other devices, capture)."""
    torch = R.torch
    dev = t.device.type
    if dev == "cpu":
        callback(t.detach().item())
        return True
    if dev != "cuda":
        return False
    cuda = torch.cuda
    capturing = getattr(cuda, "is_current_stream_capturing", None)
    if capturing is not None and capturing():
        return False
    with torch.no_grad():
        buf = torch.empty((), dtype=t.dtype, pin_memory=True)
        buf.copy_(t.detach().reshape(()), non_blocking=True)
    ev = cuda.Event()
    ev.record()
    with _lock:
        PENDING.add(buf, ev, callback)
    return True


# ---- the loss ----------------------------------------------------------------------------

_exit_registered = []


def _fmt(step, value):
    return "%d:%r" % (step, float(value))


def _pairs():
    """This process's losses not sent yet (a forked child starts with none of its parent's)."""
    s = _state.S
    if s.loss_pid != os.getpid():
        s.loss_pid, s.loss_pairs = os.getpid(), []
    return s.loss_pairs


def _add(step, value):
    with _lock:
        pairs = _pairs()
        pairs.append(_fmt(step, value))
        full = len(pairs) >= BATCH
    if full:
        flush()


def flush(wait=False):
    """Sends the losses read so far (``wait``: after the copies still on their way)."""
    try:
        if wait:
            PENDING.poll(wait=True)
        with _lock:
            pairs = list(_pairs())
            del _state.S.loss_pairs[:]
        b = _state.backend()
        note = []
        size = 0
        for p in pairs:
            if note and size + len(p) + 1 > MAX_NOTE:
                b.note("pytorch.loss", " ".join(note))
                note, size = [], 0
            note.append(p)
            size += len(p) + 1
        if note:
            b.note("pytorch.loss", " ".join(note))
    except Exception as e:
        _state.internal_error("sending the losses", e)


def _at_exit():
    if R.enabled:
        flush(wait=True)


def ensure_exit():
    """The rest is sent at exit: atexit, and multiprocessing's exit finalizers in a child process
    (torch.multiprocessing.spawn ranks, workers), which leaves through os._exit, not atexit."""
    pid = os.getpid()
    if _exit_registered and _exit_registered[-1] == pid:
        return
    if not _exit_registered:
        atexit.register(_at_exit)   # a forked child inherits it
    _exit_registered.append(pid)
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.Finalize(None, _at_exit, exitpriority=100)


def _unscaled(t):
    """The loss before GradScaler.scale() when ``t`` is its scaled copy."""
    sc = getattr(_tls, "scaled", None)
    if sc is not None:
        _tls.scaled = None
        out_ref, orig = sc
        if out_ref() is t:
            return orig
    return t


def seen(t):
    """backward() was called on ``t``: records its value as this step's loss. Never raises."""
    if not R.enabled:
        return
    try:
        torch = R.torch
        if not isinstance(t, torch.Tensor) or t.numel() != 1:
            return
        t = _unscaled(t)
        if R.backend is None:
            _state.backend()
        ensure_exit()
        s = _state.S
        step = s.steps_marked
        # A backward is a training step too, for the optimizer's step mark: lookups inside a
        # fullgraph-compiled model are not seen, the loss still is.
        s.dirty = True
        read_later(t, lambda v, step=step: _add(step, v))
        PENDING.poll()
    except Exception as e:
        _state.internal_error("recording the loss", e)


def remember_scaled(out, orig):
    """GradScaler.scale(orig) returned ``out``: its backward records ``orig``."""
    try:
        torch = R.torch
        if isinstance(out, torch.Tensor) and out is not orig and out.numel() == 1:
            import weakref
            _tls.scaled = (weakref.ref(out), orig)
    except Exception as e:
        _state.internal_error("GradScaler.scale", e)


def in_backward():
    return getattr(_tls, "depth", 0) > 0


def enter_backward():
    _tls.depth = getattr(_tls, "depth", 0) + 1


def leave_backward():
    _tls.depth -= 1
