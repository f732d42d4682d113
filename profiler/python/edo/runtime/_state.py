"""The mutable state of edo's PyTorch hooks, in two objects.

``R`` (``Runtime``): what ``patch()`` installed (the torch module, the originals it replaced,
the backend, the hook implementations, on/off). It lives as long as the patch: a reset keeps
it, because the classes stay patched.

``S`` (``State``): everything learnt about the job (tables, roots, names, counts, optimizer
caches, step bookkeeping). ``reset()`` replaces the whole object, so nothing can be forgotten
by a reset. Code reads it as ``_state.S`` at the time of use (never ``from _state import S``:
that would keep the old object after a reset).

Helpers shared by every module (warnings, the backend, the Table record) live here too.
"""

import collections
import os
import threading
import weakref

from . import _native


class _PerThread(threading.local):
    pending = None     # a class default: reading it is one attribute lookup, no getattr default


class Runtime(object):
    def __init__(self):
        self.lock = threading.RLock()
        self.torch = None          # the torch module, once patched
        self.backend = None        # _native.NativeBackend / NullBackend / a test fake
        self.patched = False
        self.enabled = True        # EDO_TORCH=0 or edo.disable() turns the hooks into no-ops
        self.emb_classes = ()      # (nn.Embedding, nn.EmbeddingBag)
        self.orig = {}             # originals of everything patched, for unpatch()
        self.hook_impl = None      # what the pre-hook calls (_counting; dynamo-wrapped under compile)
        self.functional_impl = None
        self.loss_impl = None      # _loss.seen, dynamo-disabled, for backward() inside compiled code
        self.raw_stream = None     # torch._C._cuda_getCurrentRawStream, False when absent
        # torch.compile / torch.export (_compiled): torch.compiler.is_compiling (None before
        # torch 2.3), and edo's counting operator torch.ops.edo.lookup (None where torch has no
        # torch.library.custom_op, < 2.4: then the old graph-break / fullgraph-skip hooks).
        self.compiling = None
        self.op = None
        # What the patched forward asks before _fastlookup.count (hooks/_fastcount): the
        # is_compiling above, or a constant False on torch 1.x; None: no fast path here.
        self.fast_compiling = None
        self.next_key = 0          # the next forward pre-hook's key (the operator's module key)
        self.modules_by_key = {}   # key -> (weakref of the module, its EdoPreHook)
        self.fullgraph_seen = False  # a torch.compile(fullgraph=True) was made
        self.head_hook = None      # the global forward pre-hook counting LM heads' reads (_family)


class State(object):
    def __init__(self):
        # Tables (_tables)
        self.tables = collections.OrderedDict()   # name -> Table
        self.by_base = {}                         # data_ptr -> owner Table (first name on it)
        self.name_owner = {}                      # name -> weakref of the module that holds it
        self.generation = 0                       # bumped whenever a table is registered
        self.table_list = []                      # every Table registered, at its .key (edo.lookup
                                                  # in a compiled graph names it by that key)
        # Modules and names (_naming)
        self.mod_state = weakref.WeakKeyDictionary()  # embedding module -> ModState
        self.standalone = weakref.WeakKeyDictionary()  # module -> name when in no model
        self.shape_counts = collections.Counter()  # (class, rows, dim) -> modules created
        self.creation_seq = 0
        self.seq_of = weakref.WeakKeyDictionary()  # module -> creation sequence number
        self.carried = weakref.WeakKeyDictionary()  # module -> name carried from the parent process
        self.hooks_owner = {}                      # id(_forward_pre_hooks dict) -> weakref(module)
        self.explicit_roots = []                   # [(weakref(root), prefix)], edo.instrument
        self.auto_roots = []                       # [(weakref(root), prefix)], the gc scan
        self.last_scan_seq = -1
        self.scans = 0
        # Counting and steps (_counting, _optim)
        self.tls = _PerThread()                    # .pending: the weight the pre-hook just counted
        self.dirty = False                         # lookups since the last automatic step
        self.user_steps = False                    # the job called edo.step()
        self.steps_marked = 0                      # edo steps marked so far (the losses' step)
        self.loss_pairs = []                       # "step:loss" not sent yet (_loss)
        self.loss_pid = os.getpid()                # the process they belong to
        # Facts for the tuner (_facts): optimizer notes sent, dense use
        self.opt_sent = {}                         # (table name, id(optimizer)) -> hyperparameters sent
        self.dense_checks_left = 3                 # optimizer steps that still compare gradients with lookups
        self.ids_this_step = collections.Counter() # owner table name -> ids read since its gradient was checked
        self.tally_calls = 0                       # lookups tallied (a serving job stops at _facts.TALLY_CALLS)
        self.dense_sent = set()                    # tables whose pytorch.dense_use was sent
        self.heads = {}                            # token table name -> _family.Head (its LM head)
        self.head_ids = set()                      # id() of the nn.Linear modules found as heads
        self.head_modules = {}                     # id(head module) -> (weakref(module), _family.Head)
        self.head_weights = {}                     # id(untied head weight) -> _family.Head
        self.act_step = {}                         # table name -> [output, grad bytes, calls, shape, Table, row bytes] this step (_family.act_entry)
        self.act_peak = {}                         # table name -> the most activation bytes sent for one step
        self.opt_cache = weakref.WeakKeyDictionary()
        self.released = False                      # CUPTI handed to torch.profiler
        # Weight snapshots (_weights)
        self.finalizers = weakref.WeakKeyDictionary()  # module -> weakref.finalize
        self.exit_hook_pid = None                  # pid the exit snapshot is registered in
        self.exit_done_pid = None                  # pid whose exit snapshot was taken


R = Runtime()
S = State()


def reset():
    """Forgets everything learnt about the job (tests). The patch stays."""
    global S
    with R.lock:
        for f in list(S.finalizers.values()):
            f.detach()
        S = State()


def env_disabled():
    return os.environ.get("EDO_TORCH", "1").strip().lower() in ("0", "off", "false", "no")


def verbose():
    return os.environ.get("EDO_VERBOSE", "0").strip().lower() in ("1", "true", "yes", "on")


def say(msg):
    """One line on stderr under EDO_VERBOSE=1."""
    if verbose():
        try:
            import sys
            sys.stderr.write("edo: %s\n" % msg)
            sys.stderr.flush()
        except Exception:
            pass


def backend():
    if R.backend is None:
        with R.lock:
            if R.backend is None:
                R.backend = _native.load()
    return R.backend


def warn(key, msg):
    _native.warn_once(key, msg)


def not_counted(key, msg):
    """Something edo cannot count: one warning, and the same line in the recording (the note
    pytorch.not_counted.KEY), so the recording says what is missing and why."""
    warn(key, msg)
    try:
        backend().note("pytorch.not_counted." + key, msg)
    except Exception:
        pass


def internal_error(where, exc):
    warn("internal:" + where, "internal error in %s (%s: %s); continuing without it"
         % (where, type(exc).__name__, exc))


class Table(object):
    __slots__ = ("name", "handle", "base", "rows", "dim", "dtype", "device", "tied_to",
                 "weight_ref", "pid", "snapshots", "key", "__weakref__")

    def __init__(self, name, handle, base, rows, dim, dtype, device, tied_to, weight):
        self.name = name
        self.handle = handle
        self.base = base
        self.rows = rows
        self.dim = dim
        self.dtype = dtype
        self.device = device
        self.tied_to = tied_to      # name of the table this one is tied to, or None
        self.pid = os.getpid()      # the process that registered it (a forked child inherits it)
        self.snapshots = 0          # weight snapshots handed to the tracer
        self.key = -1               # its place in State.table_list, once registered
        try:
            self.weight_ref = weakref.ref(weight)
        except TypeError:
            self.weight_ref = lambda: None

    def as_dict(self):
        return {"name": self.name, "handle": self.handle, "rows": self.rows, "dim": self.dim,
                "dtype": self.dtype, "device": self.device, "tied_to": self.tied_to}


class ModState(object):
    """An embedding module's registration: the weight seen, its pointer, its (owner) table."""
    __slots__ = ("weight", "ptr", "table")

    def __init__(self, weight, ptr, table):
        self.weight = weight
        self.ptr = ptr
        self.table = table
