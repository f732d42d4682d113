"""torch.compile and torch.export: counting as an operator that is traced into the graph.

While dynamo (torch.compile, strict torch.export) or non-strict torch.export traces a model,
edo's forward pre-hook and functional wrappers do no Python work on tensors (the tensors are
fake then); they call ``torch.ops.edo.lookup(indices, weight, key)``, a custom operator
registered through ``torch.library.custom_op`` with a fake kernel (nothing to compute, no
output) and marked as having a side effect, so no pass removes it. Every graph kind keeps it:
eager-backend, aot_eager, inductor (``mode="reduce-overhead"`` too: it is tagged
``cudagraph_unsafe`` where torch has the tag, so a CUDA graph never swallows it), and
``torch.export`` programs. No graph break, so ``fullgraph=True`` works.

When the graph runs, the operator's kernel gets the real tensors and does what the eager hook
does, in the same order:
  * key >= 0 (from the pre-hook of the module with that key): counts the indices for the
    module's table (registering its model at the first call, as the eager hook does) and
    leaves the weight as "pending";
  * key == FUNCTIONAL (from a torch.nn.functional call): counts unless the pre-hook's
    operator has just counted that weight (the module's own forward), exactly like the eager
    functional wrapper. A module called with keywords (TorchRec) is counted here;
  * key <= FIRST_TABLE (from edo.lookup(table, indices)): counts for that registered table.
A graph saved and run in another process has no module for its keys: the kernel falls back to
the table that owns the weight's memory (registered there by edo.instrument or
edo.register_table).

On a torch without ``torch.library.custom_op`` (< 2.4) ``register`` returns None and the old
behaviour stays (_patches._dynamo_compat: graph breaks, or nothing counted under fullgraph).
Without libedo_trace.so the kernel's calls go to the no-op backend: the operator changes no
result and costs one Python call per lookup in a compiled graph.
"""

import typing

from . import _counting
from ..runtime import _state
from ..runtime import _tables
from ..runtime._state import R

OP_NAME = "edo::lookup"
FUNCTIONAL = -1      # the key of a torch.nn.functional call: the weight names the table
FIRST_TABLE = -2     # keys <= -2: edo.lookup(table) on the table at State.table_list[-2 - key]


def table_key(tab):
    return FIRST_TABLE - tab.key


class _Trace(object):
    """Trace-time state: the depth of functional calls, so that the call torch's function modes
    make again from inside the first (handle_torch_function) adds no second operator."""
    depth = 0


_TRACE = _Trace()
_registered = {}     # the torch module -> the operator (registered once per process)


def _kernel(indices, weight, key):
    """The operator's kernel (CPU and CUDA): runs with real tensors when the graph runs."""
    if not R.enabled:
        return
    try:
        if R.backend is None:
            _state.backend()
        if key >= 0:
            entry = R.modules_by_key.get(key)
            module = entry[0]() if entry is not None else None
            if module is not None and weight is not None:
                w = module._parameters.get("weight")
                if w is None:
                    w = _tables.weight_of(module)
                if w is not None and w.data_ptr() == weight.data_ptr():
                    entry[1].count_eager(module, indices)
                    return
            # Not this process's module (a saved program) or a replica: by the weight's memory.
            _counting.functional_body("lookup", indices, weight)
            if weight is not None:
                _state.S.tls.pending = weight
            return
        if key <= FIRST_TABLE:
            tabs = _state.S.table_list
            i = FIRST_TABLE - key
            if i < len(tabs):
                _counting.count(tabs[i], indices)
            return
        if weight is not None:
            _counting.functional_body("lookup", indices, weight)
    except Exception as e:
        _state.internal_error("the edo::lookup operator", e)


def register(torch):
    """Registers torch.ops.edo.lookup; returns it, or None where torch cannot (then the old
    graph-break hooks stay). Never raises."""
    if torch in _registered:
        return _registered[torch]
    op = None
    try:
        lib = getattr(torch, "library", None)
        custom_op = getattr(lib, "custom_op", None)
        if custom_op is not None:
            Tensor = torch.Tensor

            def lookup(indices: Tensor, weight: typing.Optional[Tensor], key: int) -> None:
                _kernel(indices, weight, key)

            tags = ()
            unsafe = getattr(getattr(torch, "Tag", None), "cudagraph_unsafe", None)
            if unsafe is not None:
                tags = (unsafe,)
            try:
                op = custom_op(OP_NAME, lookup, mutates_args=(), tags=tags)
            except TypeError:   # torch 2.4: no tags argument
                op = custom_op(OP_NAME, lookup, mutates_args=())

            @op.register_fake
            def _fake(indices, weight, key):
                return None

            has_side_effect = getattr(getattr(getattr(torch, "fx", None), "node", None),
                                      "has_side_effect", None)
            if has_side_effect is not None:
                has_side_effect(torch.ops.edo.lookup.default)
            op = torch.ops.edo.lookup
    except Exception as e:
        _state.warn("op", "cannot register the edo::lookup operator (%s: %s): embedding lookups "
                    "inside torch.compile'd graphs are counted at graph breaks instead"
                    % (type(e).__name__, e))
        op = None
    _registered[torch] = op
    return op


def traced_hook(key, module, args):
    """The pre-hook while dynamo / torch.export traces: the operator goes into the graph."""
    if args:
        idx = args[0]
        if isinstance(idx, R.torch.Tensor):
            R.op(idx, getattr(module, "weight", None), key)
    return None


def traced_functional(orig, input, weight, args, kwargs):
    """torch.nn.functional.embedding / embedding_bag while traced: the operator, then the call."""
    if _TRACE.depth:
        return orig(input, weight, *args, **kwargs)
    t = R.torch
    if isinstance(input, t.Tensor) and isinstance(weight, t.Tensor):
        R.op(input, weight, FUNCTIONAL)
    _TRACE.depth += 1
    try:
        return orig(input, weight, *args, **kwargs)
    finally:
        _TRACE.depth -= 1
