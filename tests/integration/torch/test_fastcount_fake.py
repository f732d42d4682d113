"""Unit tests of the C fast path of an embedding forward (edo.runtime._fastlookup.count,
hooks/_fastcount.py) against the fake backend of test_hooks_fake.py, reached through
edo.runtime._fastlookup.lookup as the
native backend is (the fake's counting behind a ctypes callback bound as edo_table_lookup).

The fast path must count exactly what the Python path counts (ids, activation bytes, the last
shape), take every common call once armed, and leave every other call to the Python path. Skips
where edo._fastlookup was not built or this torch has no fast path (2.0-2.2). Run with:
    PYTHONPATH=build/lib/python /usr/bin/python3 tests/integration/torch/test_fastcount_fake.py
"""

import ctypes
import gc
import unittest
import weakref

import torch
import torch.nn as nn

from edo.facts import _family
from edo.hooks import _counting, _fastcount
from edo.hooks import _torch_hooks as H
from edo.runtime import _state
from edo.runtime._state import R

from test_hooks_fake import FakeBackend, bincount

LOOKUP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int,
                          ctypes.c_int, ctypes.c_void_p)


class CFake(FakeBackend):
    """The fake, called the way libedo_trace.so is: edo._fastlookup.lookup -> a C entry."""

    def __init__(self):
        super().__init__()
        self.rc = 0
        self._entry = LOOKUP(self._lookup)   # kept alive: the C side holds its address
        _fastcount._fastlookup.bind(ctypes.cast(self._entry, ctypes.c_void_p).value)
        self.table_lookup = _fastcount._fastlookup.lookup

    def _lookup(self, table, ptr, count, index_type, device, stream):
        FakeBackend.table_lookup(self, table, ptr, count, index_type, device, stream)
        return self.rc


@unittest.skipIf(_fastcount.count is None, "edo._fastlookup not built (no Python.h)")
class FastPathTest(unittest.TestCase):
    def setUp(self):
        self.fake = CFake()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        self.assertTrue(H.patched())
        if R.fast_compiling is None:
            self.skipTest("no fast path on torch %s" % torch.__version__)
        self.python_calls = 0
        orig = _counting.EdoPreHook.count_eager

        def spy(hs, *a, **k):
            self.python_calls += 1
            return orig(hs, *a, **k)
        _counting.EdoPreHook.count_eager = spy
        self.addCleanup(setattr, _counting.EdoPreHook, "count_eager", orig)

    def record(self, m):
        return m.__dict__["_edo_hook"]._edo_fast

    def armed_model(self):
        """An Embedding and an EmbeddingBag (include_last_offset), past the dense-use checks and
        called once each (the Python path arms their records)."""
        m = nn.Module()
        m.emb = nn.Embedding(100, 8)
        m.bag = nn.EmbeddingBag(50, 4, include_last_offset=True)
        H.instrument(m)
        m.emb(torch.tensor([1]))
        m.bag(torch.tensor([2]), torch.tensor([0, 1]))
        self.assertFalse(self.record(m.emb).armed, "not during the first steps' checks")
        _state.S.dense_checks_left = 0
        m.emb(torch.tensor([1]))
        m.bag(torch.tensor([2]), torch.tensor([0, 1]))
        self.assertTrue(self.record(m.emb).armed and self.record(m.bag).armed)
        self.python_calls = 0
        for a in _state.S.act_step.values():
            a[0:4] = [0, 0, 0, None]
        self.fake.lookups.clear()
        self.fake.counts.clear()
        return m

    def test_common_calls_counted_in_c_exactly(self):
        m = self.armed_model()
        ids1 = torch.tensor([3, 3, 7, 99, 0, 5])                 # 1-D int64
        ids2 = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
        bag_ids, offsets = torch.tensor([1, 2, 3, 4, 49]), torch.tensor([0, 2, 5])   # 2 bags (last offset is the end)
        m.emb(ids1)
        with torch.no_grad():
            m.emb(ids2)
        m.bag(bag_ids, offsets)
        self.assertEqual(self.python_calls, 0, "every call taken by the C path")
        self.assertEqual(self.fake.count_of("emb"), bincount(ids1, ids2))
        self.assertEqual(self.fake.count_of("bag"), bincount(bag_ids))
        emb, bag = _state.S.act_step["emb"], _state.S.act_step["bag"]
        # out bytes: ids x dim x 4; the gradient's only for the call with autograd on
        self.assertEqual(emb[0:3], [(6 + 6) * 8 * 4, 6 * 8 * 4, 2])
        self.assertEqual(_family._shape_list(emb), [2, 3, 8])
        self.assertEqual(bag[0:3], [2 * 4 * 4, 2 * 4 * 4, 1])
        self.assertEqual(_family._shape_list(bag), [2, 4])
        m.emb(ids1)
        self.assertEqual(_family._shape_list(emb), [6, 8])
        H.user_step()   # the step's note, then the entries start again from zero
        self.assertEqual(emb[0:4], [0, 0, 0, None])
        self.assertTrue(self.record(m.emb).armed, "the entry the record holds stays the table's")

    def test_other_calls_are_left_to_the_python_path(self):
        m = self.armed_model()
        ids = torch.tensor([[1, 2], [3, 4]])
        m.emb(ids.t())                                   # not contiguous
        m.bag(ids)                                       # 2-D ids of a bag
        m.emb(torch.tensor([], dtype=torch.int64))       # no ids
        self.assertEqual(self.python_calls, 3)
        self.assertEqual(self.fake.count_of("emb"), bincount(ids))
        self.assertEqual(self.fake.count_of("bag"), bincount(ids))
        self.assertEqual(_state.S.act_step["bag"][0], 2 * 4 * 4)
        H.set_enabled(False)
        m.emb(ids)
        self.assertEqual(self.fake.lookups[self.fake.handle("emb")], 4, "disabled: nothing counted")
        H.set_enabled(True)

    def test_a_change_disarms_until_the_python_path_checked_again(self):
        m = self.armed_model()
        m.emb.weight = nn.Parameter(torch.randn(100, 8))  # a new weight: checked (and re-armed) in Python
        m.emb(torch.tensor([4]))
        self.assertEqual(self.python_calls, 1)
        self.assertTrue(self.record(m.emb).armed)
        with torch.no_grad():
            m.emb.weight.data = torch.randn(100, 8)       # same Parameter, new storage
        m.emb(torch.tensor([4]))
        self.assertEqual(self.python_calls, 2)
        H.reset_state()                                   # a new state object
        _state.S.dense_checks_left = 0
        m.emb(torch.tensor([4]))
        self.assertEqual(self.python_calls, 3)
        m.emb(torch.tensor([4]))
        self.assertEqual(self.python_calls, 3, "armed again")

    def test_a_failed_lookup_is_reported_once_counted(self):
        m = self.armed_model()
        said = []
        warn = _state.warn
        _state.warn = lambda key, msg: said.append(key)
        self.addCleanup(setattr, _state, "warn", warn)
        self.fake.rc = -3
        m.emb(torch.tensor([1, 2]))
        self.assertEqual((self.python_calls, said), (0, ["lookup:-3"]))
        self.assertEqual(_state.S.act_step["emb"][2], 1, "the call is still accounted")

    def test_a_function_put_on_F_after_edo_is_called_by_the_python_path(self):
        # The forward's C path checks that F.embedding is still edo's wrapper itself (count's
        # functional/fname/wrapper arguments): another tool's function must be called.
        m = self.armed_model()
        F = torch.nn.functional
        edo_wrapper = F.embedding
        seen = []

        def tool(*a, **k):
            seen.append(a[0])
            return edo_wrapper(*a, **k)
        F.embedding = tool
        try:
            ids = torch.tensor([5, 6, 6])
            m.emb(ids)
            m.emb(ids)
        finally:
            F.embedding = edo_wrapper
        self.assertEqual((len(seen), self.python_calls), (2, 2))
        self.assertEqual(self.fake.count_of("emb"), bincount(ids, ids))
        m.emb(ids)
        self.assertEqual(self.python_calls, 2, "edo's wrapper back: the C path again")

    def test_a_compile_session_leaves_the_call_to_the_python_path(self):
        # Where the forward asks torch.compiler.is_dynamo_compiling() (_fastcount._compile_gate),
        # count() reads torch.compiler._is_compiling_flag itself: set by a compile or export
        # session, is_compiling() is then True and the hook's compiled path must run.
        comp = getattr(torch, "compiler", None)
        if R.fast_compiling is not getattr(comp, "is_dynamo_compiling", None):
            self.skipTest("the forward asks %r: no compile flag read in C" % (R.fast_compiling,))
        m = self.armed_model()
        comp._is_compiling_flag = True
        try:
            self.assertTrue(comp.is_compiling())
            m.emb(torch.tensor([1, 2]))
        finally:
            comp._is_compiling_flag = False
        self.assertGreater(self.python_calls, 0, "the C path took a call during a compile session")
        calls = self.python_calls
        m.emb(torch.tensor([1, 2]))
        self.assertEqual(self.python_calls, calls, "the flag cleared: the C path again")

    def test_a_class_property_over_an_attribute_the_c_path_reads_keeps_it_off(self):
        # count() reads include_last_offset (and _parameters) from the module's own dict, which
        # getattr only agrees with while no data descriptor of the name is on the class: such a
        # module is never armed, and its bags are what the property says.
        class LastOffsetBag(nn.EmbeddingBag):
            @property
            def include_last_offset(self):
                return True

            @include_last_offset.setter
            def include_last_offset(self, v):
                self.__dict__["include_last_offset"] = v   # what the dict says: False

        m = nn.Module()
        m.bag = LastOffsetBag(50, 4)
        H.instrument(m)
        _state.S.dense_checks_left = 0
        ids, offsets = torch.tensor([1, 2, 3, 4, 49]), torch.tensor([0, 2, 5])
        for _ in range(3):
            m.bag(ids, offsets)
        self.assertEqual(_state.S.act_step["bag"][0], 3 * 2 * 4 * 4, "2 bags a call, not 3")
        self.assertEqual(self.fake.count_of("bag"), bincount(ids, ids, ids))
        self.assertEqual(self.python_calls, 3)
        self.assertFalse(self.record(m.bag).armed)

    def test_the_record_keeps_nothing_alive(self):
        m = self.armed_model()
        w = weakref.ref(m.emb.weight)
        del m
        gc.collect()
        self.assertIsNone(w())


if __name__ == "__main__":
    unittest.main()
