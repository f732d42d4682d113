"""Weight snapshots (``edo record --weights`` / EDO_WEIGHTS=1).

A snapshot must be taken while the weights exist. A training script usually keeps its model
in ``main()``: by the time the interpreter exits the model has been freed. So a snapshot is
taken, for each table that a module owns:
  * when the module is released: a ``weakref.finalize`` on the module holds the module's
    ``_parameters`` dict (not the weight: the module's current weight is read at release, and
    a weight the job replaced is not kept alive). The dict outlives the module only for the
    duration of the callback, so the job's memory is what it would be without edo;
  * at exit, for every table whose weights are still alive (atexit in the main process;
    ``multiprocessing``'s exit finalizers in a worker, which leaves through ``os._exit`` and
    so never runs atexit: DataLoader workers, fork or spawn, get their own snapshot of the
    tables they read).
Holding the weights until exit instead would keep a freed model's memory (GPU memory
included) for the rest of the job; snapshotting at every step would cost a copy per step.
A later snapshot of a table replaces an earlier one. Under EDO_VERBOSE=1 every snapshot taken
or skipped is said on stderr.
"""

import os
import sys
import weakref

from ..runtime import _devices
from ..runtime import _native
from ..runtime import _state
from ..runtime._state import R


def wanted():
    return os.environ.get("EDO_WEIGHTS", "0").strip().lower() in ("1", "true", "yes", "on")


def _take(tab, w, when):
    """Hands ``w`` (table ``tab``'s weights) to the tracer; True when it took them."""
    t = R.torch
    try:
        with t.no_grad():
            w = w.detach()
            if w.dim() != 2 or int(w.shape[0]) != tab.rows or int(w.shape[1]) != tab.dim:
                _state.say("weight snapshot of %s skipped (%s): its weights are %s now, %dx%d "
                           "when registered" % (tab.name, when, tuple(w.shape), tab.rows, tab.dim))
                return False
            if w.stride(1) != 1:
                w = w.contiguous()
            if w.is_cuda:
                dev, stream = _native.CUDA, _devices.current_stream(w)
            elif w.device.type == "cpu":
                dev, stream = _native.HOST, None
            else:
                _state.say("weight snapshot of %s skipped (%s): device %s" % (tab.name, when, w.device))
                return False
            b = _state.backend()
            rc = b.table_weights(tab.handle, w.data_ptr(), w.stride(0) * w.element_size(), dev, stream)
        if rc < 0:
            _state.warn("weights:%d" % rc, "weight snapshot of %s failed: %s"
                        % (tab.name, b.strerror(int(rc))))
            return False
        tab.snapshots += 1
        _state.say("weight snapshot of %s taken (%s)" % (tab.name, when))
        return True
    except Exception as e:
        _state.internal_error("weight snapshot of " + tab.name, e)
        return False


def snapshot_weights(when="edo.snapshot_weights()"):
    """Hands the current weights of every table this process registered to the tracer, which
    keeps the hottest rows and a uniform sample for the tuner (nothing is kept unless
    EDO_WEIGHTS=1). Returns the number of tables handed over. Never raises."""
    if not R.enabled or R.torch is None:
        return 0
    done = 0
    try:
        # A forked child (a DataLoader worker) inherits its parent's tables: those are the
        # parent's to snapshot, with the parent's counts; the child takes the ones it registered.
        pid = os.getpid()
        with R.lock:
            tabs = [tab for tab in _state.S.tables.values() if tab.tied_to is None and tab.pid == pid]
        for tab in tabs:
            w = tab.weight_ref()
            if w is None:
                if not tab.snapshots:   # else: taken when its module was released
                    _state.say("weight snapshot of %s skipped (%s): its weights were freed, "
                               "and not with a module edo saw go" % (tab.name, when))
                continue
            done += _take(tab, w, when)
    except Exception as e:
        _state.internal_error("weight snapshots", e)
    return done


def _on_release(params, tab):
    if not R.enabled or not wanted() or tab.pid != os.getpid():
        return
    w = params.get("weight") if params is not None else None
    if w is None:
        _state.say("weight snapshot of %s skipped (module released): it has no weight" % tab.name)
        return
    _take(tab, w, "module released")


def watch(module, tab):
    """``module`` owns table ``tab``: snapshot it when the module goes, and at exit."""
    if not wanted():
        return
    try:
        s = _state.S
        old = s.finalizers.get(module)
        if old is not None:
            if old.alive and old.peek()[2][1] is tab:
                return
            old.detach()   # the module's weight moved to another table (model.half())
        params = module.__dict__.get("_parameters")
        f = weakref.finalize(module, _on_release, params, tab)
        f.atexit = False   # alive at exit: snapshot_at_exit() takes it
        s.finalizers[module] = f
        ensure_exit_hooks()
    except Exception as e:
        _state.internal_error("weight snapshot set-up", e)


def snapshot_at_exit():
    """Once per process, at its exit (atexit, or multiprocessing's exit finalizers)."""
    s = _state.S
    pid = os.getpid()
    if s.exit_done_pid == pid or not wanted():
        return
    s.exit_done_pid = pid
    snapshot_weights("at exit")


def ensure_exit_hooks():
    """Registers snapshot_at_exit() for this process (again in a forked child)."""
    s = _state.S
    pid = os.getpid()
    if s.exit_hook_pid == pid:
        return
    s.exit_hook_pid = pid
    if not getattr(R, "atexit_registered", False):
        # atexit runs it late, after the job's own handlers registered before it, while the
        # tracer (flushed after Python finalises) still takes frames.
        import atexit
        atexit.register(snapshot_at_exit)
        R.atexit_registered = True   # a forked child inherits the registration
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        # A multiprocessing child leaves through os._exit after these finalizers, not atexit.
        util.Finalize(None, snapshot_at_exit, exitpriority=100)


def after_fork_child():
    """A multiprocessing child (fork): its own exit snapshot of the tables it inherited."""
    if wanted() and _state.S.tables:
        ensure_exit_hooks()
