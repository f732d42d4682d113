"""Unit tests of edo's PyTorch hooks against a fake backend (no libedo_trace.so needed).

The fake has the ctypes binding's methods and reads the index memory it is handed, so the
tests see exactly what the tracer would see. Run with a torch-capable python:
    PYTHONPATH=profiler/python /usr/bin/python3 -m unittest tests/integration/torch/test_hooks_fake.py
"""

import collections
import copy
import json
import ctypes
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

import edo
from edo.runtime import _native
from edo.facts import _facts, _loss, _torchrec
from edo.hooks import _counting, _patches
from edo.runtime import _state
from edo.hooks import _torch_hooks as H
from edo.runtime._state import R

HERE = os.path.dirname(os.path.abspath(__file__))


class FakeBackend(object):
    available = True

    def __init__(self):
        self.tables = {}          # handle -> dict(name, base, rows, dim, dtype, device)
        self.by_name = {}
        self.counts = collections.defaultdict(collections.Counter)   # handle -> row -> n
        self.lookups = collections.Counter()
        self.extra = collections.defaultdict(dict)
        self.steps = 0
        self.ties = []
        self.lock = threading.Lock()

    def table_register(self, name, base, rows, dim, dtype, device):
        with self.lock:
            if name in self.by_name:
                h = self.by_name[name]
                t = self.tables[h]
                if (t["rows"], t["dim"], t["dtype"]) != (rows, dim, dtype):
                    return -6
                t["base"] = base
                return h
            for h, t in self.tables.items():
                if t["base"] == base:
                    self.ties.append((t["name"], name))
                    break
            h = len(self.tables)
            self.tables[h] = dict(name=name, base=base, rows=rows, dim=dim, dtype=dtype,
                                  device=device)
            self.by_name[name] = h
            return h

    def table_lookup(self, table, ptr, count, index_type, device, stream):
        assert device == _native.HOST, "CPU tests only"
        ctype = ctypes.c_int64 if index_type == _native.I64 else ctypes.c_int32
        rows = list((ctype * count).from_address(ptr))
        with self.lock:
            self.counts[table].update(rows)
            self.lookups[table] += count
        return 0

    def table_set_extra_bytes(self, table, kind, nbytes):
        self.extra[table][kind] = nbytes
        return 0

    def step(self):
        self.steps += 1
        return 0

    def release_gpu_capture(self, tool):
        self.released = getattr(self, "released", []) + [tool]
        return 0

    def note(self, key, value):
        self.notes = getattr(self, "notes", {})
        self.notes[key] = value
        self.note_log = getattr(self, "note_log", []) + [(key, value)]
        return 0

    def strerror(self, code):
        return "fake error %d" % code

    # helpers
    def handle(self, name):
        return self.by_name[name]

    def count_of(self, name):
        return self.counts[self.by_name[name]]

    def names(self):
        return set(self.by_name)


def bincount(*tensors):
    c = collections.Counter()
    for t in tensors:
        c.update(int(x) for x in t.reshape(-1))
    return c


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(100, 8, padding_idx=0)
        self.embeddings.position_embeddings = nn.Embedding(16, 8, max_norm=1.0)
        self.bags = nn.ModuleDict({
            "user": nn.EmbeddingBag(50, 4, mode="sum"),
            "item": nn.EmbeddingBag(60, 4, mode="mean", padding_idx=1, include_last_offset=True),
        })
        self.lm_head = nn.Linear(8, 100, bias=False)
        self.lm_head.weight = self.embeddings.word_embeddings.weight


class HookTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        self.assertTrue(H.patched())

    def test_profiler_tracing_cuda_gets_cupti_handed_over_once(self):
        # torch.profiler with CUDA activities needs CUPTI: edo hands it over first, once;
        # a CPU-only profile leaves it alone.
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]):
            torch.ones(3).sum()
        self.assertEqual(getattr(self.fake, "released", []), [])
        # What torch.profiler(activities=[..., CUDA]) calls on a CUDA build (this CPU build
        # drops CUDA before that point, so the call is made here; its bad config fails it
        # after the hand-over).
        import torch.autograd.profiler as ap
        for _ in range(2):
            with self.assertRaises(Exception):
                ap._prepare_profiler(None, {ProfilerActivity.CPU, ProfilerActivity.CUDA})
        self.assertEqual(self.fake.released, ["torch.profiler"])

    def test_names_ties_and_counts(self):
        m = Model()
        ids = torch.randint(0, 100, (4, 6))
        pos = torch.arange(6, dtype=torch.int32).expand(4, 6)      # non-contiguous int32
        m.embeddings.word_embeddings(ids)
        m.embeddings.position_embeddings(pos)
        x = torch.randint(0, 50, (10,))
        off = torch.tensor([0, 4, 7])
        m.bags["user"](x, offsets=off, per_sample_weights=torch.rand(10))
        y = torch.tensor([1, 5, 1, 7, 59, 3], dtype=torch.int64)
        m.bags["item"](y, torch.tensor([0, 2, 6]))
        y2 = torch.randint(0, 50, (3, 5))   # 2-D bags (not with include_last_offset:
        m.bags["user"](y2)                    # torch 1.13 corrupts its heap on that)
        self.assertEqual(self.fake.names(), {
            "embeddings.word_embeddings", "embeddings.position_embeddings", "bags.user",
            "bags.item", "lm_head"})
        self.assertIn(("embeddings.word_embeddings", "lm_head"), self.fake.ties)
        self.assertEqual(self.fake.count_of("embeddings.word_embeddings"), bincount(ids))
        self.assertEqual(self.fake.count_of("embeddings.position_embeddings"), bincount(pos))
        self.assertEqual(self.fake.count_of("bags.user"), bincount(x, y2))
        self.assertEqual(self.fake.count_of("bags.item"), bincount(y))
        self.assertEqual(self.fake.count_of("lm_head"), collections.Counter())
        t = self.fake.tables[self.fake.handle("embeddings.word_embeddings")]
        self.assertEqual((t["rows"], t["dim"], t["dtype"], t["device"]),
                         (100, 8, _native.F32, _native.HOST))
        self.assertEqual(t["base"], m.embeddings.word_embeddings.weight.data_ptr())
        self.assertEqual(edo.tables()["lm_head"]["tied_to"], "embeddings.word_embeddings")

    def test_functional_counted_once(self):
        m = Model()
        w = m.embeddings.word_embeddings
        a = torch.randint(0, 100, (5,))
        w(a)                                      # module: counted by the pre-hook only
        b = torch.randint(0, 100, (7,))
        F.embedding(b, w.weight)                  # direct call on a registered table
        c = torch.randint(0, 50, (6,))
        F.embedding_bag(c, m.bags["user"].weight, torch.tensor([0, 3]), mode="sum")
        m.bags["user"](c[:2], torch.tensor([0, 1]))  # bag registered by the scan above
        F.embedding(torch.randint(0, 5, (3,)), torch.randn(5, 2))   # not a table
        self.assertEqual(self.fake.count_of("embeddings.word_embeddings"), bincount(a, b))
        self.assertEqual(self.fake.count_of("bags.user"), bincount(c, c[:2]))
        self.assertEqual(len(self.fake.names()), 5)

    def test_standalone_named_by_class_and_shape(self):
        # Not by file and line: the same table in two versions of a script keeps its name.
        e = nn.Embedding(10, 3)
        f = nn.Embedding(10, 3)      # the second of that class and shape
        g = nn.EmbeddingBag(10, 3)
        f(torch.tensor([4]))
        e(torch.tensor([1, 2, 2]))
        g(torch.tensor([[5]]))
        self.assertEqual(self.fake.names(), {"Embedding[10x3]", "Embedding[10x3]#2",
                                             "EmbeddingBag[10x3]"})
        self.assertEqual(self.fake.count_of("Embedding[10x3]"), collections.Counter({1: 1, 2: 2}))
        self.assertEqual(self.fake.count_of("Embedding[10x3]#2"), collections.Counter({4: 1}))

    def test_reset_forgets_every_name(self):
        # reset_state() replaces the whole state: creation numbers start again.
        nn.Embedding(7, 2)
        H.reset_state()
        H.set_backend(self.fake)
        e = nn.Embedding(7, 2)
        e(torch.tensor([1]))
        self.assertEqual(self.fake.names(), {"Embedding[7x2]"})

    def test_a_module_pickled_for_another_process_keeps_its_name(self):
        # multiprocessing's ForkingPickler (spawn-context DataLoader workers) carries the
        # table's name; an ordinary pickle (a checkpoint) carries nothing of edo.
        from multiprocessing.reduction import ForkingPickler
        m = Model()
        m.bags["user"](torch.tensor([1]), torch.tensor([0]))
        data = bytes(ForkingPickler.dumps(m.bags["user"]))
        self.assertIn(b"bags.user", data)
        self.assertNotIn(b"_edo_table_name", pickle.dumps(m.bags["user"]))
        lone = nn.Embedding(33, 2)     # never read here: named by the rule all the same
        data_lone = bytes(ForkingPickler.dumps(lone))
        H.reset_state()                # what a fresh process knows
        H.set_backend(self.fake)
        nn.Embedding(33, 2)            # another table of that shape, created first there
        copy_ = pickle.loads(data)
        copy_(torch.tensor([2, 3]), torch.tensor([0]))
        pickle.loads(data_lone)(torch.tensor([4]))
        self.assertIn("bags.user", self.fake.names())
        self.assertIn("Embedding[33x2]", self.fake.names())
        self.assertEqual(self.fake.count_of("Embedding[33x2]"), collections.Counter({4: 1}))
        self.assertFalse(hasattr(copy_, "_edo_table_name"))

    def test_instrument_explicit_root_and_prefix(self):
        m = Model()
        edo.instrument(m, prefix="model")
        self.assertIn("model.embeddings.word_embeddings", self.fake.names())
        self.assertIn("model.lm_head", self.fake.names())
        m.bags["user"](torch.tensor([3, 4]), torch.tensor([0]))
        self.assertEqual(self.fake.count_of("model.bags.user"), collections.Counter({3: 1, 4: 1}))

    def test_shared_module_two_paths_is_a_tie(self):
        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.enc = nn.Embedding(20, 4)
                self.dec = self.enc
        t = Two()
        t.dec(torch.tensor([1]))
        self.assertEqual(self.fake.names(), {"enc", "dec"})
        self.assertIn(("enc", "dec"), self.fake.ties)

    def test_two_models_same_layout_get_distinct_names(self):
        a = Model()
        b = Model()
        a.bags["user"](torch.tensor([1]), torch.tensor([0]))
        b.bags["user"](torch.tensor([2]), torch.tensor([0]))
        self.assertIn("bags.user", self.fake.names())
        self.assertIn("bags.user#2", self.fake.names())

    def test_optimizer_state_and_steps(self):
        m = Model()
        adam = torch.optim.Adam([m.embeddings.word_embeddings.weight], lr=0.1)
        sgd = torch.optim.SGD(list(m.bags.parameters()), lr=0.1, momentum=0.9)
        ada = torch.optim.Adagrad(list(m.embeddings.position_embeddings.parameters()), lr=0.1)
        for _ in range(3):
            loss = (m.embeddings.word_embeddings(torch.tensor([[1, 2]])).sum()
                    + m.bags["user"](torch.tensor([[1, 2]])).sum()
                    + m.embeddings.position_embeddings(torch.tensor([0, 1])).sum())
            loss.backward()
            adam.step()
            sgd.step()      # a second optimizer in the same step: no second mark
            ada.step()
            for o in (adam, sgd, ada):
                o.zero_grad()
        self.assertEqual(self.fake.steps, 3)
        wb = 100 * 8 * 4
        ex = self.fake.extra[self.fake.handle("embeddings.word_embeddings")]
        self.assertEqual(ex["adam.exp_avg"], wb)
        self.assertEqual(ex["adam.exp_avg_sq"], wb)
        self.assertEqual(ex["grad"], wb)
        self.assertEqual(self.fake.extra[self.fake.handle("bags.user")]["sgd.momentum_buffer"],
                         50 * 4 * 4)
        self.assertEqual(
            self.fake.extra[self.fake.handle("embeddings.position_embeddings")]["adagrad.sum"],
            16 * 8 * 4)
        # the tied head shares the weights: no state attributed to it
        self.assertEqual(self.fake.extra.get(self.fake.handle("lm_head"), {}), {})
        edo.step()
        edo.step()
        m.embeddings.word_embeddings(torch.tensor([1]))
        m.embeddings.word_embeddings.weight.sum().backward()
        adam.step()
        self.assertEqual(self.fake.steps, 5)   # explicit steps only, from now on

    def test_sparse_grad(self):
        e = nn.Embedding(30, 4, sparse=True)
        opt = torch.optim.SGD(e.parameters(), lr=0.1)
        e(torch.tensor([1, 2, 2])).sum().backward()
        opt.step()
        g = e.weight.grad.coalesce() if False else e.weight.grad
        h = self.fake.handle(next(iter(self.fake.names())))
        exp = g._values().numel() * 4 + g._indices().numel() * 8
        self.assertEqual(self.fake.extra[h]["grad"], exp)

    def test_results_unchanged_and_hooks_disabled(self):
        def run(enabled):
            H.set_enabled(enabled)
            torch.manual_seed(0)
            m = Model()
            opt = torch.optim.Adam(m.parameters(), lr=0.01)
            out = []
            for i in range(3):
                ids = torch.randint(0, 100, (4, 5))
                h = m.embeddings.word_embeddings(ids) + m.embeddings.position_embeddings(
                    torch.arange(5))
                loss = m.lm_head(h).logsumexp(-1).mean() + m.bags["user"](
                    torch.randint(0, 50, (4, 3))).pow(2).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
                out.append(loss.detach().clone())
            return torch.stack(out), [p.detach().clone() for p in m.parameters()]
        l1, p1 = run(True)
        n_with = sum(self.fake.lookups.values())
        l2, p2 = run(False)
        self.assertEqual(sum(self.fake.lookups.values()), n_with)   # disabled: nothing counted
        self.assertTrue(torch.equal(l1, l2))
        for a, b in zip(p1, p2):
            self.assertTrue(torch.equal(a, b))
        self.assertGreater(n_with, 0)

    def test_pickle_and_deepcopy_leave_edo_out(self):
        m = Model()
        m.embeddings.word_embeddings(torch.tensor([1]))
        data = pickle.dumps(m)
        self.assertNotIn(b"_torch_hooks", data)
        self.assertNotIn(b"_EdoPreHook", data)
        m2 = pickle.loads(data)
        # the unpickled copy is instrumented again (its own hooks)
        self.assertIsNotNone(H.hook_of(m2.embeddings.word_embeddings))
        m3 = copy.deepcopy(m)
        m3.bags["user"](torch.tensor([4]), torch.tensor([0]))
        self.assertIn("bags.user#2", self.fake.names())
        # and torch.save / torch.load round-trip in a process without edo
        import io
        buf = io.BytesIO()
        torch.save(m, buf)
        self.assertNotIn(b"_torch_hooks", buf.getvalue())

    def test_jit_script_still_works(self):
        m = nn.Sequential(nn.Embedding(10, 3), nn.Linear(3, 2))
        s = torch.jit.script(m)
        x = torch.tensor([1, 2])
        self.assertTrue(torch.equal(s(x), m(x)))
        self.assertIsNotNone(H.hook_of(m[0]))

    def test_threads(self):
        e = nn.EmbeddingBag(1000, 4)
        xs = [torch.randint(0, 1000, (64, 4)) for _ in range(40)]

        def work(chunk):
            for x in chunk:
                e(x)
        ts = [threading.Thread(target=work, args=(xs[i::4],)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        name = "EmbeddingBag[1000x4]"
        self.assertEqual(self.fake.count_of(name), bincount(*xs))

    def test_weight_moves_reregister(self):
        e = nn.Embedding(10, 3)
        e(torch.tensor([1]))
        e.half()   # new storage, new dtype: registered again under a new name
        e(torch.tensor([2]))
        names = sorted(self.fake.names())
        self.assertEqual(len(names), 2, names)
        self.assertEqual(self.fake.tables[self.fake.handle(names[1])]["dtype"], _native.F16)

    def test_unsupported_index_dtype_is_ignored(self):
        e = nn.Embedding(10, 3)
        e(torch.tensor([1]))
        before = sum(self.fake.lookups.values())
        with self.assertRaises(Exception):
            e(torch.tensor([1.0]))    # torch rejects it; edo neither counts nor raises first
        self.assertEqual(sum(self.fake.lookups.values()), before)

    def test_cuda_indices_are_passed_as_device_pointers_without_sync(self):
        """The CUDA branch of the counting path, with a stand-in for a CUDA tensor that fails
        on anything that would synchronise (cpu, item, tolist, numpy, bool, int)."""
        calls = []

        class Backend(FakeBackend):
            def table_lookup(self, table, ptr, count, index_type, device, stream):
                calls.append((table, ptr, count, index_type, device, stream))
                return 0

        def sync(*a, **k):
            raise AssertionError("host synchronisation")

        class FakeCuda(object):
            def __init__(self, dtype, n, contiguous=True):
                self.dtype, self.n, self._contig = dtype, n, contiguous
                self.is_cuda = True
                self.is_cpu = False
                self.layout = torch.strided
                self.device = "cuda:1"
            def numel(self):
                return self.n
            def is_contiguous(self):
                return self._contig
            def contiguous(self):
                return FakeCuda(self.dtype, self.n, True)
            def data_ptr(self):
                return 0xC0DE00 if self._contig else 0xBAD
            cpu = item = tolist = numpy = __bool__ = __int__ = __index__ = sync

        class Stream(object):
            cuda_stream = 0x5157

        class Shim(object):
            Tensor = FakeCuda
            int32, int64, strided = torch.int32, torch.int64, torch.strided

            class cuda(object):
                @staticmethod
                def current_stream(device=None):
                    assert device == "cuda:1"
                    return Stream()

        H.set_backend(Backend())
        real = R.torch
        R.torch = Shim
        try:
            tab = _state.Table("t", 7, 1, 10, 2, "fp32", "cuda", None, torch.zeros(1))
            _counting.count(tab, FakeCuda(torch.int64, 12))
            _counting.count(tab, FakeCuda(torch.int32, 5, contiguous=False))
            _counting.count(tab, FakeCuda(torch.int64, 0))
        finally:
            R.torch = real
        self.assertEqual(calls, [(7, 0xC0DE00, 12, _native.I64, _native.CUDA, 0x5157),
                                 (7, 0xC0DE00, 5, _native.I32, _native.CUDA, 0x5157)])

    def test_torch_compile_compat_with_a_stand_in_dynamo(self):
        """torch 2.0-2.3 (no torch.library.custom_op, so no edo operator): graph breaks, and
        nothing counted while a fullgraph=True model is traced."""
        import types
        disabled = []
        compiling = [False]
        fake = types.ModuleType("torch._dynamo")
        fake.disable = lambda fn: (disabled.append(fn), fn)[1]
        fake.is_compiling = lambda: compiling[0]
        saved = (R.hook_impl, R.functional_impl)
        saved_op = (R.op, R.compiling, R.fullgraph_seen)
        R.op, R.compiling = None, fake.is_compiling
        # torch 2.x: the real torch._dynamo is loaded, and torch.compiler.is_compiling is what
        # edo asks first; both are stood in for, and put back after.
        real_dynamo = sys.modules.get("torch._dynamo")
        comp = getattr(torch, "compiler", None)
        real_is_compiling = getattr(comp, "is_compiling", None)
        if real_is_compiling is not None:
            comp.is_compiling = fake.is_compiling
        sys.modules["torch._dynamo"] = fake
        try:
            _patches._dynamo_compat(False)
            self.assertEqual(disabled, [_counting.pre_hook_body, _counting.functional_body, _loss.seen])
            self.assertIs(R.loss_impl, _loss.seen)
            R.hook_impl, R.functional_impl = saved
            _patches._dynamo_compat(True)
            self.assertIsNone(R.loss_impl)   # fullgraph: a graph break would be an error
            e = nn.Embedding(10, 2)
            compiling[0] = True
            e(torch.tensor([1]))
            self.assertEqual(sum(self.fake.lookups.values()), 0)   # skipped while compiling
            compiling[0] = False
            e(torch.tensor([1]))
            self.assertEqual(sum(self.fake.lookups.values()), 1)
        finally:
            if real_dynamo is not None:
                sys.modules["torch._dynamo"] = real_dynamo
            else:
                del sys.modules["torch._dynamo"]
            if real_is_compiling is not None:
                comp.is_compiling = real_is_compiling
            R.hook_impl, R.functional_impl = saved
            R.op, R.compiling, R.fullgraph_seen = saved_op
            R.loss_impl = None

    def test_weights_snapshot_when_the_module_is_released_and_nothing_is_kept(self):
        # edo record --weights, the model in main(): the snapshot is taken as the model goes,
        # and edo holds nothing that keeps its memory alive.
        import weakref
        calls = []

        class Backend(FakeBackend):
            def table_weights(self, table, ptr, row_stride, device, stream):
                calls.append((self.tables[table]["name"], ptr, row_stride, device))
                return 0
        H.set_backend(Backend())
        os.environ["EDO_WEIGHTS"] = "1"
        try:
            def main():
                m = Model()
                m.bags["user"](torch.tensor([1, 2]), torch.tensor([0]))
                w = m.bags["user"].weight
                m.bags["user"].weight = nn.Parameter(torch.ones(50, 4))  # replaced: not kept
                return weakref.ref(w), weakref.ref(m.bags["user"].weight), m.bags["user"].weight.data_ptr()
            old, new, ptr = main()
            self.assertIsNone(old())
            self.assertIsNone(new())     # freed with the model, not held for a snapshot
            # every table of the model (the tie lm_head shares word_embeddings' weights); of
            # bags.user the weight it holds when it goes
            self.assertEqual(sorted(c[0] for c in calls), ["bags.item", "bags.user",
                             "embeddings.position_embeddings", "embeddings.word_embeddings"])
            self.assertIn(("bags.user", ptr, 16, _native.HOST), calls)
            e = nn.Embedding(5, 2)
            e(torch.tensor([1]))
            self.assertEqual(edo.snapshot_weights(), 1)   # what is alive, on demand
            self.assertEqual(calls[-1][0], "Embedding[5x2]")
        finally:
            del os.environ["EDO_WEIGHTS"]

    def test_hook_errors_never_reach_the_job(self):
        class Boom(FakeBackend):
            def table_lookup(self, *a):
                raise RuntimeError("boom")
        H.set_backend(Boom())
        e = nn.Embedding(10, 3)
        out = e(torch.tensor([1, 2]))
        self.assertEqual(out.shape, (2, 3))


class ClassForwardTest(unittest.TestCase):
    """Counting through the patched class forward (the hook in the module's __dict__, torch's
    no-hook fast path kept) is exact however the module is subclassed, called or copied."""

    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        self.fed = {}

    def check(self, module, calls, name):
        """Runs ``calls`` (each: args, kwargs) through ``module``; every id fed to table
        ``name`` in this test is counted once."""
        fed = self.fed.setdefault(name, collections.Counter())
        for args, kwargs in calls:
            module(*args, **kwargs)
            fed.update(bincount((list(args) + [kwargs.get("input")])[0]))
        self.assertEqual(self.fake.count_of(name), fed)

    def test_plain_module_keeps_torchs_fast_path(self):
        e = nn.EmbeddingBag(40, 4, mode="sum")
        self.assertIsNotNone(H.hook_of(e))
        edo.instrument(e, "bag")
        ids, off = torch.tensor([1, 2, 3, 3, 39]), torch.tensor([0, 2])
        # the first call only takes torch's slow path (global hooks registered while it names
        # the tables are called for it); from then on no pre-hook
        self.assertEqual(len(e._forward_pre_hooks), 1)
        self.check(e, [((ids, off), {})], "bag")
        self.assertEqual(len(e._forward_pre_hooks), 0)
        psw = torch.rand(5)
        self.check(e, [((ids, off), {}), ((ids, off, psw), {}),
                       ((), {"input": ids, "offsets": off, "per_sample_weights": psw})], "bag")

    def test_counted_forward_runs_torchs_functional_directly(self):
        """Once the hook counted a call, torch's forward calls torch's own functional: nothing is
        left pending for edo's wrapper (which is not entered), the output is torch's, and a
        function another tool puts on F after edo is still called, with the ids counted once."""
        class Pending(object):   # records what the hooks leave for the functional wrapper
            def __init__(self):
                self.left = []
                self.w = None

            @property
            def pending(self):
                return self.w

            @pending.setter
            def pending(self, w):
                self.w = w
                if w is not None:
                    self.left.append(w)

        bag = nn.EmbeddingBag(40, 4, mode="sum")
        emb = nn.Embedding(40, 3)
        edo.instrument(bag, "bag")
        edo.instrument(emb, "emb")
        ids, off = torch.tensor([1, 2, 3, 3, 39]), torch.tensor([0, 2])
        self.check(bag, [((ids, off), {})], "bag")   # first calls: the slow path, as before
        self.check(emb, [((ids,), {})], "emb")
        spy = Pending()
        _state.S.tls = spy
        self.assertTrue(torch.equal(bag(ids, off), F.embedding_bag._edo_original(ids, bag.weight, off, mode="sum")))
        self.assertTrue(torch.equal(emb(ids), F.embedding._edo_original(ids, emb.weight)))
        self.fed["bag"].update(bincount(ids))
        self.fed["emb"].update(bincount(ids))
        self.assertEqual(spy.left, [])
        self.check(bag, [((ids, off), {}), ((), {"input": ids, "offsets": off})], "bag")
        self.check(emb, [((ids,), {})], "emb")
        edo_bag = F.embedding_bag
        seen = []

        def other_tool(*args, **kwargs):
            seen.append(1)
            return edo_bag(*args, **kwargs)
        F.embedding_bag = other_tool
        try:
            self.check(bag, [((ids, off), {}), ((ids, off), {})], "bag")
        finally:
            F.embedding_bag = edo_bag
        self.assertEqual(len(seen), 2)
        self.assertEqual(len(spy.left), 2)   # the hook left the weight for edo's wrapper then

    def test_subclasses_with_and_without_their_own_forward(self):
        class Scaled(nn.Embedding):      # overrides forward, calls the base one
            def forward(self, x):
                return super().forward(x) * 2

        class Direct(nn.Embedding):      # overrides forward, never calls the base one
            def forward(self, x):
                return F.embedding(x.clamp(max=9), self.weight)

        class Plain(nn.Embedding):       # inherits the base forward
            pass

        ids = torch.tensor([[1, 2], [9, 9]])
        for cls, pre_hooks in ((Scaled, 1), (Direct, 1), (Plain, 0)):
            e = cls(10, 3)
            edo.instrument(e, cls.__name__)
            self.check(e, [((ids,), {}), ((ids[0],), {})], cls.__name__)
            self.assertEqual(len(e._forward_pre_hooks), pre_hooks, cls.__name__)

    def test_pickled_module_counts_like_the_original(self):
        e = nn.EmbeddingBag(30, 4, mode="sum", include_last_offset=True)
        e2 = pickle.loads(pickle.dumps(e))
        self.assertIsNotNone(H.hook_of(e2))
        self.assertNotIn("_edo_hook", e2.state_dict())
        edo.instrument(e2, "copy")
        ids, off, psw = torch.tensor([4, 5, 6, 29]), torch.tensor([0, 1, 4]), torch.rand(4)
        self.assertTrue(torch.equal(e(ids, off, psw), e2(ids, off, psw)))
        self.assertEqual(self.fake.count_of("copy"), bincount(ids))
        c = copy.deepcopy(e2)
        edo.instrument(c, "deep")
        self.check(c, [((ids, off, psw), {})], "deep")

    def test_jit_script_puts_the_patched_forward_back(self):
        forward = nn.Embedding.__dict__["forward"]
        s = torch.jit.script(nn.Embedding(5, 2))
        self.assertIs(nn.Embedding.__dict__["forward"], forward)
        self.assertEqual(tuple(s(torch.tensor([1])).shape), (1, 2))


class FastLookupTest(unittest.TestCase):
    """edo._fastlookup (the C module, built where Python.h is) and the ctypes function it
    replaces hand edo_table_lookup the same arguments and return its result: both are bound
    here to one recording C callback of edo_table_lookup's signature."""

    PROTO = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64,
                             ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
    CALLS = [(0, 0x7F0012345678, 768, _native.I64, _native.HOST, None),
             (5, 8, 1, _native.I32, _native.CUDA, 0x55AA00FF00),
             (-2, 0, 0, _native.I64, _native.HOST, None),
             (2 ** 40, 2 ** 63 + 8, 2 ** 33, _native.I32, _native.HOST, 0)]

    def test_same_arguments_and_results_as_ctypes(self):
        try:
            from edo.runtime import _fastlookup  # noqa: F401
        except ImportError:
            self.skipTest("edo.runtime._fastlookup was not built (no Python.h): ctypes only")
        seen = []
        cb = self.PROTO(lambda *a: seen.append(a) or -len(seen))
        via_ctypes = ctypes.cast(cb, self.PROTO)
        via_ctypes.argtypes = list(self.PROTO._argtypes_)
        fast = _native.fast_lookup(cb)
        self.assertIsNotNone(fast)
        results = {}
        for name, f in (("ctypes", via_ctypes), ("fast", fast)):
            start = len(seen)
            results[name] = ([f(*c) for c in self.CALLS], seen[start:])
        self.assertEqual(results["fast"][1], results["ctypes"][1])
        self.assertEqual([r + len(self.CALLS) for r in results["fast"][0]], results["ctypes"][0])
        self.assertEqual(results["ctypes"][1][0], self.CALLS[0])
        with self.assertRaises(TypeError):
            fast(1, 2, 3)


class FactsTest(unittest.TestCase):
    """Issue 29's notes: pytorch.loss, pytorch.optimizer, pytorch.dense_use."""

    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)

    def notes(self, key):
        return [v for k, v in getattr(self.fake, "note_log", []) if k == key]

    def train(self, model, opt, steps, forward):
        losses = []
        for i in range(steps):
            loss = forward(model, i)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        return losses

    def test_each_steps_loss_batched_by_32_and_the_rest_flushed(self):
        torch.manual_seed(0)
        e = nn.Embedding(100, 4)
        opt = torch.optim.SGD(e.parameters(), lr=0.1)
        losses = self.train(e, opt, 40, lambda m, i: m(torch.tensor([i % 100, 3])).pow(2).sum())
        notes = self.notes("pytorch.loss")
        self.assertEqual(len(notes), 1)   # 32 steps: one note; the rest wait for the exit
        _loss.flush(wait=True)
        pairs = [p.split(":") for n in self.notes("pytorch.loss") for p in n.split()]
        self.assertEqual([int(s) for s, _ in pairs], list(range(40)))
        self.assertEqual([float(v) for _, v in pairs], losses)
        self.assertEqual(self.fake.steps, 40)

    def test_one_pair_per_backward_only_for_one_element_tensors(self):
        w = torch.ones(3, requires_grad=True)
        (w * 2).sum().backward()                                  # Tensor.backward: once, not twice
        torch.autograd.backward([(w * 3).sum()])                  # autograd.backward with one tensor
        (w * 4).backward(torch.ones(3))                           # not a loss: nothing
        torch.autograd.backward([(w * 5).sum(), (w * 6).sum()])   # several tensors: nothing
        torch.autograd.grad((w * 7).sum(), w)                     # no backward(): nothing
        out = (w * 8).sum()
        scaled = out * 1024.0                                     # what GradScaler.scale returns
        _loss.remember_scaled(scaled, out)
        scaled.backward()
        _loss.flush()
        self.assertEqual(self.notes("pytorch.loss"), ["0:6.0 0:9.0 0:24.0"])
        self.assertEqual(self.fake.steps, 0)

    def test_a_note_stays_under_60_KB(self):
        for i in range(6000):
            _loss._pairs().append(_loss._fmt(i, 0.1 + i))
        _loss.flush()
        notes = self.notes("pytorch.loss")
        self.assertGreater(len(notes), 1)
        self.assertTrue(all(len(n.encode()) < 60000 for n in notes))
        self.assertEqual([int(p.split(":")[0]) for n in notes for p in n.split()], list(range(6000)))

    def test_device_values_are_read_once_their_copy_is_done(self):
        # The CUDA path's bookkeeping with stand-ins: a value is handed over only after its
        # event says the copy finished (or at exit, waiting).
        class Event(object):
            def __init__(self):
                self.done, self.waited = False, False

            def query(self):
                return self.done

            def synchronize(self):
                self.waited = self.done = True
        p = _loss._Pending()
        got = []
        e1, e2 = Event(), Event()
        p.add(torch.tensor(1.5), e1, got.append)
        p.add(torch.tensor(2.5), e2, got.append)
        p.poll()
        self.assertEqual(got, [])
        e2.done = True
        p.poll()
        self.assertEqual(got, [])   # in order: the first is not done yet
        e1.done = True
        p.poll()
        self.assertEqual(got, [1.5, 2.5])
        e3 = Event()
        p.add(torch.tensor(3.5), e3, got.append)
        p.poll(wait=True)
        self.assertEqual((got[-1], e3.waited), (3.5, True))

    def test_optimizer_hyperparameters_once_and_when_they_change(self):
        m = nn.Module()
        m.a = nn.Embedding(50, 4)
        m.b = nn.EmbeddingBag(60, 4)
        opt = torch.optim.Adagrad(m.parameters(), lr=0.1, eps=1e-10, initial_accumulator_value=0.5)
        fwd = lambda mod, i: mod.a(torch.tensor([1, 2])).sum() + mod.b(torch.tensor([[3, 4]])).sum()
        self.train(m, opt, 3, fwd)
        notes = [json.loads(n) for n in self.notes("pytorch.optimizer")]
        self.assertEqual(sorted(n["table"] for n in notes), ["a", "b"])
        self.assertEqual(notes[0], {"table": notes[0]["table"], "kind": "adagrad", "lr": 0.1, "eps": 1e-10,
                                    "weight_decay": 0.0, "momentum": 0.0, "initial_accumulator_value": 0.5,
                                    "maximize": False})
        opt.param_groups[0]["lr"] = 0.105   # 5 %: a scheduler's small move is not sent
        self.train(m, opt, 1, fwd)
        self.assertEqual(len(self.notes("pytorch.optimizer")), 2)
        opt.param_groups[0]["lr"] = 0.05
        opt.param_groups[0]["eps"] = 1e-8
        self.train(m, opt, 1, fwd)
        last = [json.loads(n) for n in self.notes("pytorch.optimizer")][2:]
        self.assertEqual(sorted((n["table"], n["lr"], n["eps"]) for n in last), [("a", 0.05, 1e-8), ("b", 0.05, 1e-8)])

    def test_dense_use_from_the_gradient_in_the_first_steps_only(self):
        torch.manual_seed(0)
        m = nn.Module()
        m.tok = nn.Embedding(200, 8)
        m.other = nn.Embedding(200, 8)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)

        def fwd(mod, i):
            h = mod.tok(torch.tensor([1, 2, 3])) + mod.other(torch.tensor([4, 5, 6]))
            return F.linear(h, mod.tok.weight).logsumexp(1).sum()   # an untied functional head
        self.train(m, opt, 5, fwd)
        notes = [json.loads(n) for n in self.notes("pytorch.dense_use")]
        self.assertEqual(notes, [{"table": "tok", "why": "the gradient reached 200 of 200 rows in a step whose lookups read 3 ids"}])
        self.assertEqual(_state.S.dense_checks_left, 0)
        self.assertEqual(len(_state.S.ids_this_step), 0)   # no tally after the first steps

    def test_no_dense_use_for_lookups_with_two_optimizers(self):
        # The first optimizer marks the step; the second one's table was read before that mark
        # (examples/dlrm_like.py: SGD for one table, Adam for the others).
        m = nn.Module()
        m.a = nn.Embedding(100, 4)
        m.b = nn.Embedding(100, 4)
        first = torch.optim.SGD([m.a.weight], lr=0.1)
        second = torch.optim.Adam([m.b.weight], lr=0.1)
        for i in range(4):
            loss = (m.a(torch.tensor([i, 7])) * m.b(torch.tensor([i + 1, 9]))).sum()
            first.zero_grad()
            second.zero_grad()
            loss.backward()
            first.step()
            second.step()
        self.assertEqual(self.notes("pytorch.dense_use"), [])
        self.assertEqual(self.fake.steps, 4)
        self.assertEqual(_state.S.dense_checks_left, 0)

    def test_a_serving_job_stops_tallying(self):
        e = nn.Embedding(10, 2)
        with torch.no_grad():
            for _ in range(_facts.TALLY_CALLS + 5):
                e(torch.tensor([1]))
        self.assertEqual((_state.S.dense_checks_left, len(_state.S.ids_this_step)), (0, 0))

    def test_dense_use_of_a_tied_linear_head(self):
        m = nn.Module()
        m.emb = nn.Embedding(30, 4)
        m.head = nn.Linear(4, 30, bias=False)
        m.head.weight = m.emb.weight
        with torch.no_grad():
            m.head(m.emb(torch.tensor([1])))   # inference: no gradient to look at
        notes = [json.loads(n) for n in self.notes("pytorch.dense_use")]
        self.assertEqual(notes, [{"table": "emb", "why": "nn.Linear 'head' holds the same weight (a tied head reads every row)"}])


class FamilyTest(unittest.TestCase):
    """Issue 33 points 1 and 2: the token table's LM head (pytorch.lm_head.TABLE) and each table's
    activation bytes per step (pytorch.activation.TABLE), against sizes worked out by hand."""

    V, D, B, T = 50, 8, 3, 5

    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)

    def last(self, key):
        vals = [v for k, v in getattr(self.fake, "note_log", []) if k == key]
        return json.loads(vals[-1]) if vals else None

    def gpt(self, tied):
        m = nn.Module()
        m.tok = nn.Embedding(self.V, self.D)
        m.pos = nn.Embedding(self.T, self.D)
        m.lm_head = nn.Linear(self.D, self.V, bias=False)
        if tied:
            m.lm_head.weight = m.tok.weight
        return m

    def step(self, m, opt, ids, heads=1):
        x = m.tok(ids) + m.pos(torch.arange(ids.shape[1]))
        loss = sum(m.lm_head(x).logsumexp(-1).mean() for _ in range(heads))
        opt.zero_grad()
        loss.backward()
        opt.step()

    def test_untied_head_with_adam(self):
        m = self.gpt(tied=False)
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        ids = torch.randint(0, self.V, (self.B, self.T))
        self.step(m, opt, ids)
        self.step(m, opt, ids, heads=2)   # two reads of the head in one step
        h = self.last("pytorch.lm_head.tok")
        vd4 = self.V * self.D * 4
        self.assertEqual(h, {"head": "lm_head", "tied": False, "rows": self.V, "dim": self.D, "dtype": "fp32",
                             "weight_bytes": vd4, "grad_bytes": vd4, "optimizer_bytes": 2 * vd4,
                             "optimizer_state": {"adam.exp_avg": vd4, "adam.exp_avg_sq": vd4},
                             "dense_reads_per_step": 2, "dense_read_bytes_per_step": 2 * vd4})
        self.assertIsNone(self.last("pytorch.lm_head.pos"))
        self.assertNotIn("lm_head", _state.S.tables)   # an untied head is not a table
        a = self.last("pytorch.activation.tok")
        out = self.B * self.T * self.D * 4
        self.assertEqual(a, {"output_bytes": out, "grad_bytes": out, "peak_bytes": 2 * out, "calls": 1,
                             "shape": [self.B, self.T, self.D], "dtype": "fp32"})
        p = self.last("pytorch.activation.pos")
        self.assertEqual((p["output_bytes"], p["shape"]), (self.T * self.D * 4, [self.T, self.D]))

    def test_tied_head(self):
        m = self.gpt(tied=True)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        ids = torch.randint(0, self.V, (self.B, self.T))
        self.step(m, opt, ids)
        h = self.last("pytorch.lm_head.tok")
        self.assertEqual((h["head"], h["tied"], h["weight_bytes"], h["grad_bytes"], h["optimizer_bytes"]),
                         ("lm_head", True, 0, 0, 0))
        self.assertEqual((h["dense_reads_per_step"], h["dense_read_bytes_per_step"]), (1, self.V * self.D * 4))

    def test_a_model_with_a_head_still_pickles_without_edo(self):
        m = self.gpt(tied=False)
        m.tok(torch.tensor([[1, 2]]))
        data = pickle.dumps(m)
        self.assertNotIn(b"edo", data)
        self.assertIn("tok", _state.S.heads)

    def test_peak_step_and_no_grad(self):
        m = nn.Module()
        m.e = nn.Embedding(100, 6)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for t_len in (4, 9, 2):      # the peak is the longest step
            loss = m.e(torch.randint(0, 100, (2, t_len))).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        a = self.last("pytorch.activation.e")
        self.assertEqual((a["output_bytes"], a["grad_bytes"], a["shape"]), (2 * 9 * 6 * 4, 2 * 9 * 6 * 4, [2, 9, 6]))

    def test_embedding_bag_and_functional(self):
        m = nn.Module()
        m.bag = nn.EmbeddingBag(40, 4, mode="sum")
        m.bag2 = nn.EmbeddingBag(40, 4, mode="mean", include_last_offset=True)
        m.dense = nn.Linear(4, 1)
        opt = torch.optim.Adagrad(m.parameters(), lr=0.1)
        ids = torch.tensor([1, 2, 3, 4, 5, 6, 7])
        offsets = torch.tensor([0, 2, 5])              # 3 bags
        out = m.bag(ids, offsets)[:2] + m.bag2(ids, torch.tensor([0, 3, 7]))   # 2 bags (last offset is the end)
        out = out + F.embedding_bag(ids, m.bag.weight, offsets)[:2]             # functional: 3 more bags
        loss = m.dense(out).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        a = self.last("pytorch.activation.bag")
        self.assertEqual((a["output_bytes"], a["calls"]), ((3 + 3) * 4 * 4, 2))
        b = self.last("pytorch.activation.bag2")
        self.assertEqual((b["output_bytes"], b["grad_bytes"], b["shape"]), (2 * 4 * 4, 2 * 4 * 4, [2, 4]))
        self.assertIsNone(self.last("pytorch.lm_head.bag"))   # a 1 x 4 Linear is no head

    def test_inference_has_no_gradient_bytes(self):
        m = nn.Module()
        m.e = nn.Embedding(20, 3)
        with torch.no_grad():
            m.e(torch.tensor([[1, 2], [3, 4]]))
        H.user_step()
        a = self.last("pytorch.activation.e")
        self.assertEqual((a["output_bytes"], a["grad_bytes"]), (2 * 2 * 3 * 4, 0))


class TorchRecTest(unittest.TestCase):
    """TorchRec collections (the stand-in package of tests/unit/tuner/fake_torchrec, written from
    pytorch/torchrec a48cef79): config names and features noted, keyword calls counted, bags
    counted from the EmbeddingBag's output."""

    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        stand_in = os.path.join(HERE, "..", "..", "unit", "tuner", "fake_torchrec")
        if stand_in not in sys.path:
            sys.path.insert(0, stand_in)

    def test_collection_tables_noted_and_counted(self):
        import json
        from torchrec.modules.embedding_configs import EmbeddingBagConfig
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
        ebc = EmbeddingBagCollection(tables=[
            EmbeddingBagConfig(name="t_a", num_embeddings=30, embedding_dim=4, feature_names=["fa", "fb"]),
            EmbeddingBagConfig(name="t_b", num_embeddings=20, embedding_dim=4)])
        root = nn.Module()
        root.ebc = ebc
        edo.instrument(root)
        # B = 2 samples; lengths fa: 2 1, fb: 0 3, t_b: 1 3. The collection calls each bag with
        # keywords (input=, offsets=), which torch 1.13's pre-hooks do not see.
        kjt = KeyedJaggedTensor(keys=["fa", "fb", "t_b"], values=torch.arange(1, 11),
                                lengths=torch.tensor([2, 1, 0, 3, 1, 3]))
        ebc(kjt)
        self.assertEqual(self.fake.lookups[self.fake.handle("ebc.embedding_bags.t_a")], 6)
        self.assertEqual(self.fake.lookups[self.fake.handle("ebc.embedding_bags.t_b")], 4)
        _torchrec.flush()
        a = json.loads(self.fake.notes["torchrec.table.ebc.embedding_bags.t_a"])
        b = json.loads(self.fake.notes["torchrec.table.ebc.embedding_bags.t_b"])
        self.assertEqual((a["config"], a["features"], a["bags"]), ("t_a", ["fa", "fb"], 4))
        self.assertEqual((b["config"], b["features"], b["bags"]), ("t_b", ["t_b"], 2))
        # Per feature, from the KeyedJaggedTensor's lengths: fa 2 + 1 ids, fb 0 + 3, t_b 1 + 3; B = 2 each.
        self.assertEqual((a["feature_lookups"], a["feature_bags"]), ([3, 3], [2, 2]))
        self.assertEqual((b["feature_lookups"], b["feature_bags"]), ([4], [2]))
        # The bag counter is global: a pickled model does not refer to edo.
        data = pickle.dumps(root)
        self.assertNotIn(b"_count_bags", data)
        self.assertNotIn(b"edo.", data)

    def test_collection_found_in_its_first_forward_counts_that_call_once(self):
        """Not instrumented: the scan finds the collection at its first lookup, inside its first
        forward, before any forward hook exists; that call is counted from the forward's frame,
        and the next one by the hook: each exactly once."""
        import json
        from torchrec.modules.embedding_configs import EmbeddingBagConfig
        from torchrec.modules.embedding_modules import EmbeddingBagCollection
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
        ebc = EmbeddingBagCollection(tables=[
            EmbeddingBagConfig(name="t_u", num_embeddings=50, embedding_dim=4, feature_names=["uid", "hist"])])
        kjt = KeyedJaggedTensor(keys=["uid", "hist"], values=torch.arange(0, 9), lengths=torch.tensor([1, 1, 1, 4, 0, 2]))
        ebc(kjt)   # uid: 1 1 1, hist: 4 0 2 (B = 3)
        ebc(kjt)
        _torchrec.flush()
        n = json.loads(self.fake.notes["torchrec.table.embedding_bags.t_u"])
        self.assertEqual((n["feature_lookups"], n["feature_bags"], n["bags"]), ([6, 12], [6, 6], 12))

    def test_embedding_collection_tables_noted(self):
        import json
        from torchrec.modules.embedding_configs import EmbeddingConfig
        from torchrec.modules.embedding_modules import EmbeddingCollection
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
        ec = EmbeddingCollection(tables=[EmbeddingConfig(name="t_q", num_embeddings=40, embedding_dim=4,
                                                         feature_names=["query", "title"])])
        kjt = KeyedJaggedTensor(keys=["query", "title"], values=torch.arange(0, 7), lengths=torch.tensor([2, 1, 3, 1]))
        ec(kjt)   # not instrumented: found by the scan on its first lookup
        self.assertEqual(self.fake.lookups[self.fake.handle("embeddings.t_q")], 7)
        _torchrec.flush()
        n = json.loads(self.fake.notes["torchrec.table.embeddings.t_q"])
        # No pooling: no bags counted (the export writes feature_names only).
        self.assertEqual((n["config"], n["features"], n["collection"], n["bags"]),
                         ("t_q", ["query", "title"], "EmbeddingCollection", 0))


def _run(code, env_extra, pythonpath):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("EDO_TRACE_LIB", None)
    env.update(env_extra)
    env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)


class BootTest(unittest.TestCase):
    """The sitecustomize hook, in fresh interpreters."""

    @classmethod
    def setUpClass(cls):
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(edo.__file__)))
        cls.pkg = pkg
        cls.boot = os.path.join(pkg, "edo_boot")

    def test_lazy_patch_and_chaining(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
            pp = os.pathsep.join([self.boot, self.pkg, d])
            r = _run("""
                import os, sys
                assert os.environ.get('USER_SITECUSTOMIZE_RAN') == '1', 'chain'
                assert 'torch' not in sys.modules, 'torch imported early'
                assert 'edo' not in sys.modules, 'edo imported early'
                import torch
                from edo.hooks import _torch_hooks as H
                assert H.patched(), 'not patched'
                e = torch.nn.Embedding(5, 2)
                assert H.hook_of(e) is not None, 'no hook'
                e(torch.tensor([1]))
                assert not e._forward_pre_hooks, 'a pre-hook: torch fast path lost'
                print('OK')
                """, {}, pp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("OK", r.stdout)
            self.assertIn("libedo_trace.so is not loaded", r.stderr)
            self.assertEqual(r.stderr.count("edo:"), 1, r.stderr)

    def test_no_torch_import_means_nothing(self):
        pp = os.pathsep.join([self.boot, self.pkg])
        r = _run("import sys; print('torch' in sys.modules, 'edo' in sys.modules)", {}, pp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "False False")
        self.assertEqual(r.stderr, "")

    def test_edo_torch_0(self):
        pp = os.pathsep.join([self.boot, self.pkg])
        r = _run("""
            import torch, edo
            from edo.hooks import _torch_hooks as H
            e = torch.nn.Embedding(5, 2)
            assert not H.patched()
            assert not e._forward_pre_hooks and H.hook_of(e) is None
            assert edo.instrument(e) is e and not edo.tables()
            edo.step()
            print('OK')
            """, {"EDO_TORCH": "0"}, pp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("OK", r.stdout)
        self.assertEqual(r.stderr, "")

    def test_import_errors_in_torch_propagate_unchanged(self):
        pp = os.pathsep.join([self.boot, self.pkg])
        r = _run("""
            try:
                import torch_does_not_exist
            except ImportError as e:
                print('OK', e.name)
            """, {}, pp)
        self.assertIn("OK torch_does_not_exist", r.stdout)


if __name__ == "__main__":
    unittest.main()
