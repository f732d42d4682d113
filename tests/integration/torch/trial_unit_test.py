#!/usr/bin/env python3
"""Issue 29's pure-Python pieces, without the tracer (EDO_TORCH=0): stochastic rounding, the plan
validator (edo.apply_plan all or nothing), and fp16/bf16 training tables trained the FBGEMM way
(fp32 optimizer state, stochastic rounding) by the job's own Adagrad / Adam / AdamW / SGD.
Runs with $EDO_TEST_PYTHON when set (PyPI's torch 2.x), else this python (Debian's 1.13).
Exits 77 (ctest: skipped) without torch.

    trial_unit_test.py [--source SOURCE_DIR] [unittest args]
"""

import json
import math
import os
import sys
import unittest

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
if "--source" in sys.argv:
    i = sys.argv.index("--source")
    SOURCE = sys.argv[i + 1]
    del sys.argv[i:i + 2]
_py = os.environ.get("EDO_TEST_PYTHON")
if _py and os.path.realpath(_py) != os.path.realpath(sys.executable) and not os.environ.get("EDO_REEXEC"):
    os.environ["EDO_REEXEC"] = "1"
    os.execv(_py, [_py, os.path.abspath(__file__), "--source", SOURCE] + sys.argv[1:])
os.environ["EDO_TORCH"] = "0"  # the conversions and the optimizer hooks alone
sys.path[:0] = [os.path.join(SOURCE, "profiler", "python"), HERE]

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: no torch in %s" % sys.executable)
    sys.exit(SKIP)

import edo  # noqa: E402
from edo.plan import _apply, _lowp, _plan_file  # noqa: E402
import trial_job  # noqa: E402

print("torch %s (%s)" % (torch.__version__, sys.executable))
STEPS = 50


def entry(name, strategy, params=None, **extra):
    e = dict(name=name, strategy=strategy, params=params or {}, device_bytes=0, host_bytes=0, error=0.0,
             needs_retraining=False, why="", step_us=1.0)
    e.update(extra)
    return e


def plan(*tables):
    return {"schema": "edo.plan/1", "tables": list(tables)}


class StochasticRounding(unittest.TestCase):
    def sr(self, x, dtype, seed=7):
        return _lowp.stochastic_round(x, dtype, torch.Generator().manual_seed(seed)).float()

    def test_unbiased_between_two_fp16_numbers(self):
        # 1 + 0.3 ulp: round-to-nearest gives 1 every time (a bias of 0.3 ulp); stochastic rounding
        # gives 1 + ulp 30 % of the time. With 10^5 draws the mean's standard error is 0.0015 ulp.
        for base, frac in ((1.0, 0.3), (-1.0, 0.3), (512.0, 0.7)):
            step = abs(base) * 2.0 ** -10   # fp16's spacing above |base| (a power of two)
            x0 = base + math.copysign(frac * step, base)
            x = torch.full((100000,), x0)
            r = self.sr(x, torch.float16)
            self.assertEqual(sorted(r.unique().tolist()), sorted([base, base + math.copysign(step, base)]))
            self.assertLess(abs(float(r.double().mean()) - x0) / step, 0.01, x0)
            nearest = x.half().float().double().mean()   # round-to-nearest: off by frac or 1 - frac
            self.assertGreater(abs(float(nearest) - x0) / step, 0.25)

    def test_unbiased_below_fp16_normals_and_for_bf16(self):
        x0 = -2.3 * 2.0 ** -24   # an fp16 subnormal: the spacing is 2^-24
        r = self.sr(torch.full((100000,), x0), torch.float16)
        self.assertEqual(sorted((r * 2 ** 24).unique().tolist()), [-3.0, -2.0])
        self.assertLess(abs(float(r.double().mean()) - x0) / 2.0 ** -24, 0.01)
        x0 = 3 * (1 + 0.7 * 2.0 ** -7)   # bf16 keeps 7 mantissa bits
        r = self.sr(torch.full((100000,), x0), torch.bfloat16)
        self.assertLess(abs(float(r.double().mean()) - x0) / (3 * 2.0 ** -7), 0.01)

    def test_exact_values_and_non_finite_stay_and_the_seed_decides(self):
        x = torch.tensor([0.0, -0.0, 1.0, -3.5, 65504.0, 2.0 ** -24, float("inf"), -float("inf")])
        for dt in (torch.float16, torch.bfloat16):
            self.assertTrue(torch.equal(self.sr(x, dt), x.to(dt).float()), dt)
        self.assertTrue(math.isnan(float(self.sr(torch.tensor([float("nan")]), torch.float16)[0])))
        y = torch.randn(1000)
        self.assertTrue(torch.equal(self.sr(y, torch.float16, 3), self.sr(y, torch.float16, 3)))
        self.assertFalse(torch.equal(self.sr(y, torch.float16, 3), self.sr(y, torch.float16, 4)))


class Validator(unittest.TestCase):
    def model(self):
        torch.manual_seed(0)
        return trial_job.Recommender()

    def refused(self, tables, *words):
        m = self.model()
        w_user, w_item = m.user.weight.detach().clone(), m.item.weight.detach().clone()
        with self.assertRaises(edo.PlanError) as cm:
            edo.apply_plan(m, plan(*tables))
        msg = str(cm.exception)
        self.assertNotIn("\n", msg)
        for w in words:
            self.assertIn(w, msg)
        # Nothing changed: the valid table listed first was not converted either.
        self.assertEqual(m.user.weight.dtype, torch.float32)
        self.assertTrue(torch.equal(m.user.weight, w_user) and torch.equal(m.item.weight, w_item))
        self.assertEqual(len(m.user._forward_hooks), 0)
        return msg

    def test_bad_tables_are_one_line_naming_the_table_and_change_nothing(self):
        ok = entry("user", "fp16", training=True)
        self.refused([ok, entry("item", "int3")], 'table "item"', 'strategy "int3" is not one of edo\'s')
        self.refused([ok, entry("item", 'fp16"\nimport os')], 'table "item"', 'strategy "fp16"?import os"')
        self.refused([ok, entry("item", "fp16", {"rank": 4})], 'params key "rank" is not one a fp16 choice has')
        self.refused([ok, entry("item", "offload", {"cache_rows": "lots"})], 'params "cache_rows" is not a finite whole')
        self.refused([ok, entry("item", "offload", {})], 'no "cache_rows"')
        self.refused([ok, entry("item", "offload", {"cache_rows": 10, "cache_policy": "fifo"})],
                     'params "cache_policy" is not "lru" or "lfu"')
        self.refused([ok, entry("item", "fp16", cache_policy="lru")], '"cache_policy" is set on a table that is not offloaded')
        self.refused([ok, entry("item", "offload", {"cache_rows": 10}, cache_policy="mru")], '"cache_policy" is not "lru" or "lfu"')
        self.refused([ok, entry("item", "fp16", training="yes")], '"training" is not true or false')
        self.refused([ok, entry("item", "fp16", gradient="both")], '"gradient" is "both", not sparse or dense')
        self.refused([ok, entry("item", "fp16", validated="true")], '"validated" is not true or false')
        self.refused([ok, entry("item", "fp16", train_precision=["fp32"])], '"train_precision" is not an object')
        self.refused([ok, entry("item", "fp16", dense_use=3)], '"dense_use" is not text')
        self.refused([ok, entry("item", "fp16", strategy_label=None, spec="int8")], 'spec "int8" is not a fp16 spec')
        self.refused([ok, entry("item", "fp16", optimizer="adam")], 'optimizer "adam" is not "rowwise_adagrad"')
        self.refused([ok, dict(entry("item", "fp16"), device_bytes="x")], "device_bytes is not a byte count")
        self.refused([ok, entry("user", "fp32")], 'table "user" is listed twice')
        self.refused([ok, entry("item", "shared", {"with": "nobody", "format": "fp16"})], '"nobody", which the plan does not list')

    def test_the_keys_the_tuner_adds_are_accepted(self):
        m = self.model()
        r = edo.apply_plan(m, plan(entry("user", "fp16", training=True, gradient="dense", validated=True,
                                         train_precision={"optimizer_state": "fp32", "rounding": "stochastic"},
                                         dense_use="", strategy_label="fp16 (fp32 state, stochastic rounding)"),
                                   entry("item", "fp32", gradient="sparse", validated=False)))
        self.assertTrue(r["user"]["applied"], r)
        self.assertEqual(m.user.weight.dtype, torch.float16)

    def test_a_conversion_failing_midway_puts_back_what_was_converted(self):
        m = self.model()
        w = m.user.weight
        before = w.detach().clone()
        real = _apply._test_lookup
        calls = []

        def failing(mod):
            calls.append(mod)
            if len(calls) == 2:
                raise ValueError("injected")
            return real(mod)
        _apply._test_lookup = failing
        try:
            with self.assertRaises(ValueError):
                edo.apply_plan(m, plan(entry("user", "fp16", training=True), entry("item", "fp16", training=True)))
        finally:
            _apply._test_lookup = real
        self.assertIs(m.user.weight, w)
        self.assertEqual(w.dtype, torch.float32)
        self.assertTrue(torch.equal(w, before))
        self.assertEqual((len(m.user._forward_hooks), len(m.user._forward_pre_hooks)), (0, 0))
        self.assertFalse(_lowp.registered(w))
        self.assertEqual(m.item.weight.dtype, torch.float32)

    def test_train_precision_is_followed(self):
        m = self.model()
        r = edo.apply_plan(m, plan(entry("user", "fp16", training=True, train_precision={"rounding": "nearest"}),
                                   entry("item", "fp16", training=True, train_precision={"optimizer_state": "fp8"})))
        self.assertTrue(r["user"]["applied"])
        self.assertIn("rounded to nearest", r["user"]["why"])
        self.assertTrue(_lowp.registered(m.user.weight))
        self.assertFalse(r["item"]["applied"])
        self.assertIn("train_precision", r["item"]["why"])
        self.assertEqual(m.item.weight.dtype, torch.float32)

    def test_a_table_read_whole_is_not_cast(self):
        m = self.model()
        head = nn.Linear(trial_job.DIM, trial_job.ITEMS, bias=False)
        head.weight = m.item.weight
        m.head = head
        r = edo.apply_plan(m, plan(entry("item", "fp16", training=True), entry("user", "fp16", dense_use="matmul")))
        self.assertFalse(r["item"]["applied"])
        self.assertIn("Linear 'head'", r["item"]["why"])
        self.assertFalse(r["user"]["applied"])
        self.assertIn("matmul", r["user"]["why"])
        self.assertEqual((m.item.weight.dtype, m.user.weight.dtype), (torch.float32, torch.float32))


def run(opt_name, mode, sparse=False, dtype="fp16", optimizer_first=True):
    """Trains the recommender STEPS steps. mode: fp32 | plan (edo.apply_plan) | cast (a plain
    cast of the weights, what apply_plan did before, then the optimizer built, as docs/tuning.md
    said to). Returns (losses, model, optimizer)."""
    torch.manual_seed(0)
    m = trial_job.Recommender(sparse=sparse)
    opt = None
    if optimizer_first and mode != "cast":
        opt, _ = trial_job.make_optimizer(opt_name, list(m.parameters()))
    if mode == "plan":
        r = edo.apply_plan(m, plan(entry("user", dtype, training=True), entry("item", dtype, training=True)))
        if not all(e["applied"] for e in r.values()):
            return None, r, None
    elif mode == "cast":
        dt = torch.float16 if dtype == "fp16" else torch.bfloat16
        for e in (m.user, m.item):
            e.weight.data = e.weight.data.to(dt)
            e.register_forward_hook(lambda mod, a, out: out.float())
    if opt is None:
        opt, _ = trial_job.make_optimizer(opt_name, list(m.parameters()))
    return trial_job.train(m, opt, STEPS), m, opt


def trains_like(base, got, tol=0.01):
    """None when ``got`` (losses) trained like ``base``, else what is wrong."""
    if got is None or any(not math.isfinite(x) for x in got):
        return "a loss is not finite: %s" % (got and got[-5:])
    a, b = sum(base[-10:]) / 10, sum(got[-10:]) / 10
    if abs(a - b) > tol:
        return "the last 10 steps' mean loss is %.5f, the fp32 run's %.5f" % (b, a)
    return None


class LowPrecisionTraining(unittest.TestCase):
    def check(self, opt_name, sparse=False, dtype="fp16", optimizer_first=True):
        base, _, _ = run(opt_name, "fp32", sparse)
        got, m, opt = run(opt_name, "plan", sparse, dtype, optimizer_first)
        if got is None:
            return m   # not applied (no kernel): the result says why
        self.assertIsNone(trains_like(base, got), (opt_name, sparse, dtype))
        # The fp32 run does learn (a fair comparison): the last 10 steps' mean loss is lower.
        self.assertLess(sum(base[-10:]) / 10, sum(base[:5]) / 5 - 0.02, opt_name)
        want = torch.float16 if dtype == "fp16" else torch.bfloat16
        for e in (m.user, m.item):
            w = e.weight
            self.assertEqual(w.dtype, want)
            self.assertEqual(w.grad.dtype, want)
            state = [v for v in opt.state[w].values() if isinstance(v, torch.Tensor) and v.numel() > 1]
            self.assertTrue(state, opt_name)
            for v in state:
                self.assertEqual(v.dtype, torch.float32, opt_name)
        return None

    def test_adagrad_eps_1e_10_and_adam_fp16(self):
        for name in ("adagrad", "adam"):
            self.check(name)

    def test_adamw_and_sgd_with_momentum(self):
        for name in ("adamw", "sgd"):
            self.check(name)

    def test_sparse_gradients_with_adagrad(self):
        self.check("adagrad", sparse=True)

    def test_an_optimizer_built_after_the_plan_keeps_fp32_state(self):
        # Adagrad makes its sum in __init__, in the weight's dtype (fp16 here): made fp32 at the first step.
        self.check("adagrad", optimizer_first=False)

    def test_bf16_where_this_torch_has_the_kernels(self):
        r = self.check("adam", dtype="bf16")
        if r is not None:
            self.assertIn("no bfloat16", json.dumps(r))

    def test_amp_grad_scaler_unscales_the_fp16_gradients(self):
        # GradScaler refuses fp16 gradients ("Attempting to unscale FP16 gradients") unless told
        # they are expected: they are, for a table trained the FBGEMM way. CPU GradScaler: torch 2.3+.
        import torch.nn.functional as F
        try:
            torch.amp.GradScaler("cpu")
        except (AttributeError, TypeError, RuntimeError):
            self.skipTest("no CPU GradScaler in torch %s" % torch.__version__)
        results = []
        for mode in ("fp32", "plan"):
            torch.manual_seed(0)
            m = trial_job.Recommender()
            opt = torch.optim.Adam(m.parameters(), lr=0.01)
            if mode == "plan":
                edo.apply_plan(m, plan(entry("user", "fp16", training=True), entry("item", "fp16", training=True)))
            scaler = torch.amp.GradScaler("cpu")
            losses = []
            for users, offsets, items, label in trial_job.batches(STEPS):
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = F.binary_cross_entropy_with_logits(m(users, offsets, items).float(), label)
                opt.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                losses.append(float(loss.detach()))
            results.append(losses)
        self.assertIsNone(trains_like(results[0], results[1]))

    def test_the_old_plain_cast_fails_this_check(self):
        # What apply_plan did before: cast the weights; the optimizer's state follows them in
        # fp16, where Adagrad's eps (1e-10) and Adam's (1e-8) are 0: NaN (torch 1.13's CPU
        # Adagrad and Adam have no fp16 kernels at all).
        for name in ("adagrad", "adam"):
            base, _, _ = run(name, "fp32")
            try:
                got, _, _ = run(name, "cast")
            except RuntimeError as e:
                got = None
                print("plain cast + %s raised: %s" % (name, str(e).splitlines()[0][:100]))
            self.assertIsNotNone(trains_like(base, got), name)


if __name__ == "__main__":
    unittest.main()
