"""The bodies of edo.register_table and edo.lookup once torch is patched.

Below ``_torch_hooks`` (which patches torch first, then calls these) so that a module that only
registers and counts a table, such as a table converted by ``edo.apply_plan`` (plan/_apply),
can do it without importing the patching, which itself imports plan/_apply for
``edo record --apply-plan`` (hooks/_trial): that was an import circle through edo's __init__.
"""

from . import _compiled
from ._counting import count
from ..facts import _weights
from ..runtime import _state
from ..runtime import _tables
from ..runtime._state import R, backend


def register_table(name, weight):
    """A 2-D tensor registered as table ``name`` in a patched process; the Table or None."""
    if not R.patched:
        return None
    try:
        with R.lock:
            tab = _tables.register_weight(name, weight)
        if tab is not None and _weights.wanted():
            _weights.ensure_exit_hooks()
        return tab
    except Exception as e:
        _state.internal_error("register_table", e)
        return None


def lookup(table, indices):
    """Counts one batch of row ids read from a registered table (or its name)."""
    if not R.enabled or table is None:
        return
    try:
        if isinstance(table, str):
            table = _state.S.tables.get(table)
            if table is None:
                return
        compiling = R.compiling
        if R.op is not None and compiling is not None and compiling():
            # Traced by torch.compile / torch.export: the operator goes into the graph.
            if isinstance(indices, R.torch.Tensor) and table.key >= 0:
                R.op(indices, None, _compiled.table_key(table))
            return
        if R.backend is None:
            backend()
        count(table, indices)
    except Exception as e:
        _state.internal_error("lookup", e)
