"""Unit tests of edo's counting operator (profiler/python/edo/_compiled.py) against the fake
backend of test_hooks_fake.py: torch.compile (fullgraph=True, eager and aot_eager backends) and
torch.export count exactly what the eager model counts, steps are marked, results do not change,
and the operator passes torch.library.opcheck. Skipped on a torch without
torch.library.custom_op (Debian's 1.13): there the hooks work as before (test_hooks_fake.py).
    PYTHONPATH=profiler/python EDO_TEST_PYTHON -m unittest tests/integration/torch/test_compiled_fake.py
"""

import collections
import os
import sys
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import edo  # noqa: E402
from edo.hooks import _compiled  # noqa: E402
from edo.hooks import _torch_hooks as H  # noqa: E402
from edo.runtime._state import R  # noqa: E402
from test_hooks_fake import FakeBackend, bincount  # noqa: E402

H.patch()
NO_OP = ("torch %s has no torch.library.custom_op / torch.compile (2.4+): edo's operator is not "
         "used there and the hooks work as before" % torch.__version__)


class Rec(nn.Module):
    """Every way a table is read: a module called positionally, one called with keywords (how
    TorchRec calls its bags), and a direct functional call on an edo.register_table weight."""

    def __init__(self):
        super().__init__()
        self.user = nn.EmbeddingBag(50, 4, mode="sum")
        self.item = nn.Embedding(60, 4)
        self.kw = nn.EmbeddingBag(40, 4, mode="mean")
        self.side = nn.Parameter(torch.randn(30, 4))
        self.top = nn.Linear(16, 1)

    def forward(self, users, offsets, items, kw, side):
        u = self.user(users, offsets)
        i = self.item(items)
        k = self.kw(input=kw, offsets=offsets)
        s = F.embedding(side, self.side)
        return self.top(torch.cat([u, i, k, s], 1)).squeeze(1)


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    users = torch.randint(0, 50, (24,), generator=g)
    offsets = torch.arange(0, 24, 3)
    items = torch.randint(0, 60, (8,), generator=g)
    kw = torch.randint(0, 40, (24,), generator=g, dtype=torch.int32)
    side = torch.randint(0, 30, (8,), generator=g)
    return users, offsets, items, kw, side


def expected(batches):
    want = collections.defaultdict(collections.Counter)
    for users, _offsets, items, kw, side in batches:
        want["user"].update(bincount(users))
        want["item"].update(bincount(items))
        want["kw"].update(bincount(kw))
        want["side"].update(bincount(side))
    return dict(want)


@unittest.skipUnless(R.op is not None and hasattr(torch, "compile"), NO_OP)
class CompiledTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        torch._dynamo.reset()

    def counts(self):
        return {n: dict(self.fake.count_of(n)) for n in self.fake.names()}

    def model(self):
        torch.manual_seed(0)
        m = Rec()
        edo.register_table("side", m.side)
        return m

    def train(self, run, model, steps):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        batches = [batch(s) for s in range(steps)]
        outs = []
        for b in batches:
            opt.zero_grad()
            out = run(*b)
            out.sum().backward()
            opt.step()
            outs.append(out.detach())
        return batches, outs

    def check_compiled(self, backend):
        ref = Rec()
        ref.load_state_dict(self.model().state_dict())
        H.set_enabled(False)
        _, want_out = self.train(ref, ref, 4)
        H.set_enabled(True)
        H.reset_state()
        self.fake.__init__()
        m = self.model()
        compiled = torch.compile(m, backend=backend, fullgraph=True)
        batches, outs = self.train(compiled, m, 4)
        self.assertEqual({n: dict(c) for n, c in expected(batches).items()}, self.counts())
        self.assertEqual(self.fake.steps, 4)   # one step per optimizer.step(), as eager
        for a, b in zip(outs, want_out):
            self.assertTrue(torch.equal(a, b), "edo changed the compiled model's results")

    def test_opcheck(self):
        w = torch.randn(10, 3)
        idx = torch.tensor([1, 2, 3])
        for args in ((idx, w, 0), (idx, w, _compiled.FUNCTIONAL), (idx, None, 5)):
            torch.library.opcheck(torch.ops.edo.lookup.default, args)

    def test_fullgraph_eager_backend_counts_exactly(self):
        self.check_compiled("eager")

    def test_fullgraph_aot_eager_counts_exactly(self):
        self.check_compiled("aot_eager")

    def test_the_operator_is_in_the_graph_and_nothing_breaks_it(self):
        m = self.model()
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm
        torch.compile(m, backend=backend, fullgraph=True)(*batch(0))
        self.assertEqual(len(graphs), 1)
        ops = [n for n in graphs[0].graph.nodes if n.target is torch.ops.edo.lookup
               or getattr(n.target, "_name", "") == "edo::lookup"]
        self.assertEqual(len(ops), 2)   # the two positional modules' hooks (the rest at aot)

    def test_torch_export_counts_exactly(self):
        m = self.model()
        b0 = batch(0)
        ep = torch.export.export(m, b0)
        self.assertEqual(sum(self.fake.lookups.values()), 0)   # tracing counts nothing
        prog = ep.module()
        batches = [batch(s) for s in range(3)]
        for b in batches:
            out = prog(*b)
            H.set_enabled(False)
            self.assertTrue(torch.equal(out, m(*b)))
            H.set_enabled(True)
        self.assertEqual({n: dict(c) for n, c in expected(batches).items()}, self.counts())
        names = {str(n.target) for n in ep.graph.nodes}
        self.assertIn("edo.lookup.default", names)

    def test_edo_lookup_inside_a_compiled_graph(self):
        w = torch.randn(20, 3)
        h = edo.register_table("by_hand", w)

        def f(idx):
            edo.lookup(h, idx)
            edo.lookup("by_hand", idx[:2])
            return w[idx].sum()
        idx = torch.tensor([3, 4, 4, 19])
        for backend in ("eager", "aot_eager"):
            torch._dynamo.reset()
            torch.compile(f, backend=backend, fullgraph=True)(idx)
        self.assertEqual(dict(self.fake.count_of("by_hand")), {3: 4, 4: 6, 19: 2})

    def test_a_graph_from_another_process_counts_by_the_weight(self):
        # A key that no module of this process has (a saved program): the table that owns the
        # weight's memory is counted, once (the functional operator after it is skipped).
        m = self.model()
        edo.instrument(m)
        idx = torch.tensor([1, 2, 2])
        torch.ops.edo.lookup(idx, m.item.weight, 10 ** 9)
        torch.ops.edo.lookup(idx, m.item.weight, _compiled.FUNCTIONAL)
        self.assertEqual(dict(self.fake.count_of("item")), {1: 1, 2: 2})

    def test_disabled_operator_counts_nothing(self):
        m = self.model()
        edo.instrument(m)
        H.set_enabled(False)
        torch.ops.edo.lookup(torch.tensor([1]), m.item.weight, _compiled.FUNCTIONAL)
        H.set_enabled(True)
        self.assertEqual(sum(self.fake.lookups.values()), 0)


@unittest.skipUnless(hasattr(torch, "compile"), "torch %s has no torch.compile" % torch.__version__)
class WithoutTheOperatorTest(unittest.TestCase):
    """torch 2.0-2.3 (stood in for by hiding the operator): under fullgraph=True nothing inside
    the graph can be counted; the model's tables are registered at torch.compile all the same,
    and the warning and the recording (note pytorch.not_counted.fullgraph) say what and why."""

    def setUp(self):
        self.fake = FakeBackend()
        H.set_backend(self.fake)
        H.reset_state()
        H.set_enabled(True)
        torch._dynamo.reset()
        self.saved = (R.op, R.hook_impl, R.functional_impl, R.loss_impl, R.fullgraph_seen)
        R.op = None

    def tearDown(self):
        R.op, R.hook_impl, R.functional_impl, R.loss_impl, R.fullgraph_seen = self.saved

    def test_fullgraph_registers_the_tables_and_says_what_is_not_counted(self):
        from edo.runtime import _native
        _native._warned.discard("fullgraph")
        torch.manual_seed(0)
        m = Rec()
        compiled = torch.compile(m, backend="eager", fullgraph=True)
        self.assertEqual(self.fake.names(), {"user", "item", "kw"})   # registered at compile
        note = getattr(self.fake, "notes", {}).get("pytorch.not_counted.fullgraph", "")
        self.assertIn("torch 2.4", note)
        self.assertIn("not counted", note)
        out = compiled(*batch(0))
        self.assertEqual(out.shape, (8,))
        self.assertEqual(self.fake.names(), {"user", "item", "kw"})


if __name__ == "__main__":
    unittest.main()
