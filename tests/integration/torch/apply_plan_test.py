#!/usr/bin/env python3
"""edo.apply_plan and edo.RowwiseAdagrad on the bundled examples/dlrm_like.py model, with the
PyTorch at hand (Debian's python3-torch 1.13 on the build machine). No tracer needed: the
package runs with EDO_TORCH=0. Exits 77 (ctest: skipped) without torch.

    apply_plan_test.py [--source SOURCE_DIR] [unittest args]
"""

import json
import math
import os
import shutil
import sqlite3
import sys
import tempfile
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
if "--source" in sys.argv:
    i = sys.argv.index("--source")
    SOURCE = sys.argv[i + 1]
    del sys.argv[i:i + 2]
os.environ["EDO_TORCH"] = "0"  # the hooks stay out: this tests the conversions alone
sys.path[:0] = [os.path.join(SOURCE, "profiler", "python"), os.path.join(SOURCE, "examples")]

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("skipped: no torch in %s" % sys.executable)
    sys.exit(SKIP)

import edo  # noqa: E402
import dlrm_like  # noqa: E402

DIM = 16


def entry(name, strategy, params=None, optimizer="", recorded_optimizer="", error=0.01, device_bytes=0, training=None):
    e = dict(name=name, strategy=strategy, params=params or {}, device_bytes=device_bytes, host_bytes=0,
             step_us=1.0, error=error, hit_rate=None, needs_retraining=False, why="",
             optimizer=optimizer, recorded_optimizer=recorded_optimizer)
    if training is not None:  # plans before schema 13 had no "training"
        e["training"] = training
    return e


def plan(*tables):
    return {"schema": "edo.plan/1", "tables": list(tables)}


def plan_edodb(path, table, strategy, rows, device_bytes, training=None):
    """An .edodb holding one plan, as `edo tune` writes its tables (db/src/schema.cpp), filled by
    hand: one table of `rows` x 16 fp32 whose choice is `strategy`. training=None: a schema
    before 13 (no tune_tables.training column); else that column's value."""
    db = sqlite3.connect(path)
    db.executescript("""
      CREATE TABLE tune_tables (run_id INTEGER, name TEXT, rows INTEGER, dim INTEGER, dtype TEXT,
        device_bytes INTEGER, lookups_per_step REAL, tuned INTEGER, shares_with TEXT, weights TEXT, optimizer TEXT%s);
      CREATE TABLE tune_candidates (id INTEGER PRIMARY KEY, run_id INTEGER, table_name TEXT, strategy TEXT,
        spec TEXT, params TEXT, optimizer TEXT, device_bytes INTEGER, host_bytes INTEGER, step_us REAL, error REAL,
        hit_rate REAL, recorded_hit_rate REAL, needs_retraining INTEGER, measured INTEGER, measured_rows INTEGER,
        note TEXT);
      CREATE TABLE tune_plans (id INTEGER PRIMARY KEY, run_id INTEGER);
      CREATE TABLE tune_choices (plan_id INTEGER, table_name TEXT, candidate_id INTEGER, shares_with TEXT,
        device_bytes INTEGER, host_bytes INTEGER, step_us REAL, why TEXT);
    """ % ("" if training is None else ", training INTEGER"))
    db.execute("INSERT INTO tune_tables VALUES (1, ?, ?, 16, 'fp32', ?, 100, 1, '', 'recorded', ''%s)"
               % ("" if training is None else ", %d" % int(training)), (table, rows, rows * 64))
    db.execute("INSERT INTO tune_candidates VALUES (4, 1, ?, ?, ?, '{}', '', ?, 0, 1, 0.09, NULL, NULL, 0, 1, ?, '')",
               (table, strategy, strategy, device_bytes, rows))
    db.execute("INSERT INTO tune_plans VALUES (1, 1)")
    db.execute("INSERT INTO tune_choices VALUES (1, ?, 4, '', ?, 0, 1, ?)", (table, device_bytes, strategy))
    db.commit()
    db.close()


class Args(object):
    steps, warmup, batch, pooling, ad_rows, side_rows = 4, 0, 64, 6, 10000, 300


def batches(seed):
    return dlrm_like.make_batches(Args(), torch.Generator().manual_seed(seed), DIM)


def model():
    torch.manual_seed(1234)
    return dlrm_like.DLRMLike(DIM, Args.ad_rows)


def feed(m, key, f):
    return m.sparse[key](f["input"], f.get("offsets"), f.get("psw"))


class Conversions(unittest.TestCase):
    def test_int8_int4_fp16_lookups_match_the_dequantised_table_in_every_bag_form(self):
        # user: 1-D + offsets, sum; item: 2-D bags, mean; category: per-sample weights and
        # int32 indices; ad: nn.Embedding with max_norm (renormalised before packing).
        ref = model()
        m = model()
        res = edo.apply_plan(m, plan(entry("sparse.user", "int8"), entry("sparse.item", "int4"),
                                     entry("sparse.category", "fp16"), entry("ad", "int8")))
        for name in ("sparse.user", "sparse.item", "sparse.category", "ad"):
            self.assertTrue(res[name]["applied"], res[name])
        self.assertEqual(res["sparse.user"]["after_bytes"], 20000 * (DIM + 8))   # FBGEMM byte rows
        self.assertEqual(res["sparse.item"]["after_bytes"], 50000 * (DIM // 2 + 4))  # 4-bit rows
        self.assertEqual(res["sparse.category"]["after_bytes"], 1000 * DIM * 2)
        self.assertEqual(res["ad"]["after_bytes"], 10000 * (DIM + 8))
        self.assertEqual(res["sparse.user"]["before_bytes"], 20000 * DIM * 4)
        with torch.no_grad():
            for b in batches(7):
                for key in ("user", "item", "category"):
                    f = b["feats"][key]
                    got = feed(m, key, f)
                    self.assertEqual(got.dtype, torch.float32)
                    # The same lookup on the dequantised rows: the conversion keeps the module's semantics.
                    w = m.sparse[key].weight.float()
                    mode = ref.sparse[key].mode
                    want = F.embedding_bag(f["input"].long(), w, f["offsets"].long() if "offsets" in f else None,
                                           mode=mode, per_sample_weights=f.get("psw"))
                    # (fp16 sums in fp16 on the CPU: a looser bound there)
                    self.assertLess(float((got - want).abs().max()), 5e-3 if key == "category" else 1e-4, key)
                    # ... and close to the fp32 model's lookup (row-wise quantisation error).
                    orig = feed(ref, key, f)
                    rel = float((got - orig).norm() / orig.norm())
                    self.assertLess(rel, {"user": 0.02, "item": 0.2, "category": 0.002}[key], key)
                ids = b["ad"]
                got = m.ad(ids)
                self.assertEqual(tuple(got.shape), (ids.shape[0], DIM))
                want = ref.ad(ids)  # renormalises the rows it reads, as the packed rows were
                self.assertLess(float((got - want).norm() / want.norm()), 0.02)
            # The whole model runs, the functional lookup on sparse.item's weight included.
            b = batches(8)[0]
            side = nn.Embedding(Args.side_rows, DIM)
            sv = side(b["side"]).sum(1)
            out, out_ref = m(b["dense"], b["feats"], b["ad"], sv), ref(b["dense"], b["feats"], b["ad"], sv)
            self.assertLess(float((out - out_ref).norm() / out_ref.norm()), 0.1)

    def test_padding_idx_and_include_last_offset_and_mean_with_padding(self):
        torch.manual_seed(3)
        for mode in ("sum", "mean"):
            src = nn.EmbeddingBag(500, 8, mode=mode, padding_idx=0, include_last_offset=True)
            holder = nn.Module()
            holder.t = src
            ref = nn.EmbeddingBag(500, 8, mode=mode, padding_idx=0, include_last_offset=True)
            ref.load_state_dict(src.state_dict())
            r = edo.apply_plan(holder, plan(entry("t", "int8")))
            self.assertTrue(r["t"]["applied"], r)
            idx = torch.tensor([0, 5, 7, 0, 0, 9, 11, 0])
            off = torch.tensor([0, 3, 5, 5, 8])  # bags: [0 5 7] [0 0] [] [9 11 0]
            got = holder.t(idx, off)
            want = F.embedding_bag(idx, holder.t.weight, off, mode=mode, padding_idx=0, include_last_offset=True)
            self.assertLess(float((got - want).abs().max()), 1e-5, mode)
            self.assertLess(float((got - ref(idx, off)).abs().max()), 0.05, mode)

    def test_a_tied_table_stays_tied(self):
        for strategy in ("fp16", "int8"):
            m = nn.Module()
            m.a = nn.Embedding(300, 8)
            m.b = nn.Embedding(300, 8)
            m.b.weight = m.a.weight
            r = edo.apply_plan(m, plan(entry("a", strategy), entry("b", "shared", {"with": "a", "format": strategy})))
            self.assertTrue(r["a"]["applied"] and r["b"]["applied"], r)
            self.assertIn("stays tied", r["b"]["why"])
            if strategy == "fp16":
                self.assertIs(m.a.weight, m.b.weight)
                self.assertEqual(m.a.weight.dtype, torch.float16)
            else:
                self.assertIs(m.a.packed, m.b.packed)
            ids = torch.tensor([[1, 2], [3, 299]])
            self.assertTrue(torch.equal(m.a(ids), m.b(ids)))

    def test_strategies_without_a_pytorch_module_are_left_as_they_were(self):
        m = model()
        before = {n: mod for n, mod in m.named_modules()}
        w = m.sparse["user"].weight.clone()
        r = edo.apply_plan(m, plan(entry("sparse.user", "offload", {"cache_rows": 100, "policy": "lru"}),
                                   entry("sparse.item", "pq", {"m": 2, "k": 256}),
                                   entry("sparse.category", "multihash", {"buckets": 250, "k": 2}),
                                   entry("ad", "qr", {"m": 4}),
                                   entry("sparse.geo", "int8")))
        for name, word in (("sparse.user", "cache"), ("sparse.item", "product"), ("sparse.category", "multi-hash"),
                           ("ad", "quotient"), ("sparse.geo", "max mode")):
            self.assertFalse(r[name]["applied"], r[name])
            self.assertIn(word, r[name]["why"])
            self.assertEqual(r[name]["after_bytes"], r[name]["before_bytes"])
        for n, mod in m.named_modules():
            self.assertIs(mod, before[n])
        self.assertTrue(torch.equal(m.sparse["user"].weight, w))

    def test_int8_of_a_table_off_the_cpu_is_refused(self):
        # The quantized operators are CPU operators; a "meta" table stands for a CUDA one here.
        m = nn.Module()
        m.t = nn.EmbeddingBag(10, 4, device="meta")
        r = edo.apply_plan(m, plan(entry("t", "int8")))
        self.assertFalse(r["t"]["applied"])
        self.assertIn("run on the CPU", r["t"]["why"])
        self.assertIsInstance(m.t, nn.EmbeddingBag)

    def test_bf16_without_a_kernel_is_refused_after_a_test_lookup(self):
        m = model()
        r = edo.apply_plan(m, plan(entry("sparse.user", "bf16")))
        try:
            F.embedding_bag(torch.tensor([0]), torch.zeros(2, 2, dtype=torch.bfloat16), torch.tensor([0]))
            has_kernel = True
        except RuntimeError:
            has_kernel = False
        self.assertEqual(r["sparse.user"]["applied"], has_kernel, r)
        self.assertEqual(m.sparse["user"].weight.dtype, torch.bfloat16 if has_kernel else torch.float32)
        if not has_kernel:
            self.assertIn("no bfloat16 lookup kernel", r["sparse.user"]["why"])

    def test_pruned_is_a_row_remap_with_a_default_row(self):
        m = model()
        ref = model()
        read = torch.tensor([5, 9, 9, 17, 4000])
        r = edo.apply_plan(m, plan(entry("sparse.user", "pruned", {"kept_rows": 3})))
        self.assertFalse(r["sparse.user"]["applied"])
        self.assertIn("rows_read", r["sparse.user"]["why"])
        r = edo.apply_plan(m, plan(entry("sparse.user", "pruned", {"kept_rows": 4})), rows_read={"sparse.user": read})
        self.assertTrue(r["sparse.user"]["applied"], r)
        self.assertEqual(r["sparse.user"]["after_bytes"], 20000 * 4 + (4 + 1) * DIM * 4)
        idx, off = torch.tensor([5, 9, 17, 4000, 6, 7]), torch.tensor([0, 4])
        got = m.sparse["user"](idx, off)
        want = ref.sparse["user"](torch.tensor([5, 9, 17, 4000]), torch.tensor([0]))
        self.assertTrue(torch.allclose(got[0], want[0], atol=1e-6))
        self.assertTrue(torch.equal(got[1], torch.zeros(DIM)))  # unread rows: the default row
        r = edo.apply_plan(model(), plan(entry("sparse.user", "pruned", {"kept_rows": 400})),
                           rows_read={"sparse.user": read})
        self.assertFalse(r["sparse.user"]["applied"])

    def test_a_training_plan_keeps_trainable_formats_and_names_the_optimizer(self):
        m = model()
        r = edo.apply_plan(m, plan(entry("sparse.user", "int8", recorded_optimizer="adam"),
                                   entry("sparse.item", "fp16", optimizer="rowwise_adagrad", recorded_optimizer="adam")))
        self.assertFalse(r["sparse.user"]["applied"])
        self.assertIn("inference", r["sparse.user"]["why"])
        self.assertTrue(r["sparse.item"]["applied"])
        self.assertEqual(r["sparse.item"]["optimizer"], "rowwise_adagrad")
        self.assertIn("RowwiseAdagrad", r["sparse.item"]["why"])
        # Training runs: fp16 table under RowwiseAdagrad, the rest as before.
        opt = edo.RowwiseAdagrad([m.sparse["item"].weight], lr=0.1)
        other = torch.optim.SGD([p for n, p in m.named_parameters() if n != "sparse.item.weight"], lr=0.01)
        side = nn.Embedding(Args.side_rows, DIM)
        w0 = m.sparse["item"].weight.detach().clone()
        for b in batches(9):
            loss = F.binary_cross_entropy_with_logits(
                m(b["dense"], b["feats"], b["ad"], side(b["side"]).sum(1)), b["label"])
            opt.zero_grad()
            other.zero_grad()
            loss.backward()
            opt.step()
            other.step()
        self.assertEqual(m.sparse["item"].weight.dtype, torch.float16)
        self.assertFalse(torch.equal(m.sparse["item"].weight, w0))
        self.assertEqual(opt.state[m.sparse["item"].weight]["sum"].numel(), 50000)  # one float a row
        # training=False applies int8 to a training-recorded table (the serving model).
        r = edo.apply_plan(m, plan(entry("sparse.user", "int8", recorded_optimizer="adam")), training=False)
        self.assertTrue(r["sparse.user"]["applied"])

    def test_a_table_trained_with_plain_sgd_is_a_training_table(self):
        # Plain SGD keeps no optimizer state: the plan says "training" (from the recorded
        # gradients), and int8 is refused as for any trained table.
        m = model()
        r = edo.apply_plan(m, plan(entry("ad", "int8", training=True), entry("sparse.user", "int8", training=False)))
        self.assertFalse(r["ad"]["applied"])
        self.assertIn("inference", r["ad"]["why"])
        self.assertTrue(r["sparse.user"]["applied"], r["sparse.user"]["why"])
        # The same from an .edodb of schema 13 (tune_tables.training).
        p = os.path.join(tempfile.mkdtemp(prefix="edo-apply-sgd-"), "run.edodb")
        plan_edodb(p, "ad", "int8", 10000, 200000, training=True)
        r = edo.apply_plan(model(), p)
        self.assertFalse(r["ad"]["applied"])
        self.assertIn("inference", r["ad"]["why"])
        shutil.rmtree(os.path.dirname(p))


class RowwiseAdagradTest(unittest.TestCase):
    def test_matches_the_formula_and_sparse_equals_dense(self):
        torch.manual_seed(0)
        w0 = torch.randn(6, 4)
        idx = torch.tensor([1, 3, 3, 5])
        results = []
        for sparse in (False, True):
            e = nn.Embedding(6, 4, sparse=sparse)
            e.weight.data.copy_(w0)
            opt = edo.RowwiseAdagrad(e.parameters(), lr=0.5, eps=1e-6)
            acc = torch.zeros(6)
            w = w0.clone()
            for step in range(3):
                opt.zero_grad()
                out = e(idx)
                loss = (out * torch.arange(1.0, 5.0)).sum() * (step + 1)
                loss.backward()
                # By hand: the gradient of a row is its lookups' count x (1..4) x (step+1).
                g = torch.zeros(6, 4)
                for i in idx.tolist():
                    g[i] += torch.arange(1.0, 5.0) * (step + 1)
                rows = [1, 3, 5]
                for r in rows:
                    acc[r] += float((g[r] ** 2).mean())
                    w[r] -= 0.5 * g[r] / (math.sqrt(acc[r]) + 1e-6)
                opt.step()
                self.assertTrue(torch.allclose(e.weight.detach(), w, atol=1e-5), (sparse, step))
            self.assertTrue(torch.allclose(opt.state[e.weight]["sum"], acc, atol=1e-4))
            results.append(e.weight.detach().clone())
        self.assertTrue(torch.allclose(results[0], results[1], atol=1e-6))

    def test_refuses_what_it_cannot_train(self):
        with self.assertRaises(ValueError):
            edo.RowwiseAdagrad([nn.Parameter(torch.zeros(3))])
        with self.assertRaises(ValueError):
            edo.RowwiseAdagrad([nn.Parameter(torch.zeros(3, 3))], lr=-1)


class PlanFiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="edo-apply-")

    def write(self, name, text, mode="w"):
        p = os.path.join(self.dir, name)
        with open(p, mode) as f:
            f.write(text)
        return p

    def test_json_and_yaml_files(self):
        doc = plan(entry("sparse.user", "int8"))
        p = self.write("p.json", json.dumps(doc))
        self.assertTrue(edo.apply_plan(model(), p)["sparse.user"]["applied"])
        try:
            import yaml
        except ImportError:
            return
        p = self.write("p.yaml", yaml.safe_dump(doc))
        self.assertTrue(edo.apply_plan(model(), p)["sparse.user"]["applied"])

    def test_an_edodb_plan_is_read_with_sqlite3(self):
        # A schema before 13: the table trains only when an optimizer was recorded (none here).
        p = os.path.join(self.dir, "run.edodb")
        plan_edodb(p, "sparse.user", "int4", 20000, 240000)
        r = edo.apply_plan(model(), p)
        self.assertEqual(r["sparse.user"]["strategy"], "int4")
        self.assertEqual(r["sparse.user"]["after_bytes"], 240000)
        empty = os.path.join(self.dir, "empty.edodb")
        sqlite3.connect(empty).execute("CREATE TABLE t (x)").connection.close()
        with self.assertRaises(edo.PlanError) as cm:
            edo.apply_plan(model(), empty)
        self.assertIn("edo tune", str(cm.exception))

    def test_bad_plans_are_one_line_errors(self):
        for text in ("{", '{"schema": "other"}', '{"schema": "edo.plan/1", "tables": 3}',
                     json.dumps(plan(dict(entry("a", "int8"), device_bytes=-1))),
                     json.dumps(plan(dict(entry("a", "int8"), device_bytes=1e308))),
                     json.dumps(plan(dict(entry("a", "int8"), params="x")))):
            p = self.write("bad.json", text)
            with self.assertRaises(edo.PlanError) as cm:
                edo.apply_plan(model(), p)
            self.assertNotIn("\n", str(cm.exception))
        with self.assertRaises(edo.PlanError):
            edo.apply_plan(model(), os.path.join(self.dir, "missing.json"))


if __name__ == "__main__":
    unittest.main()
