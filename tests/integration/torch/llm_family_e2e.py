#!/usr/bin/env python3
"""Issue 33 points 1 and 2 at the user's level: llm_family_job.py (a small GPT-like model) under
`edo record`, then `edo report --json` and `edo report`, every byte checked against the job's
shapes worked out here by hand.

    llm_family_e2e.py CASE --build BUILD_DIR [--source SOURCE_DIR]

CASE:
  untied   the head is its own nn.Linear (V x D): reported beside the token table (not as a
           table) with its weights, gradient and AdamW state (exp_avg, exp_avg_sq: V x D fp32
           each), one read of every row per step; activations of the token table (B x T x D),
           the position table (T x D) and the EmbeddingBag (bags x D), and their gradients
  tied     the head holds the token table's weight: reported as tied (no bytes of its own, the
           tie and the dense use as before), its read per step counted; the same activations
"""

import json
import os
import subprocess
import sys
import tempfile

from edo_job_env import HERE, run, setup

JOB = os.path.join(HERE, "llm_family_job.py")
V, D, B, T, TAGS = 500, 16, 4, 12, 100
FP32 = 4


def check(cond, what):
    if not cond:
        sys.stderr.write("FAILED: %s\n" % what)
        sys.exit(1)


def main():
    case = sys.argv[1]
    sys.argv = [sys.argv[0]] + sys.argv[2:]
    build, source, edo, py, env = setup()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "run.edodb")
        run([edo, "record", "-o", db, "--", py, JOB, "--head", case, "--steps", "4"], env=env)
        rep = json.loads(run([edo, "report", "--json", db], env=env).stdout)
        text = run([edo, "report", db], env=env).stdout
    tables = {t["name"]: t for t in rep["tables"]}
    head_bytes = V * D * FP32

    # Point 2: activations per step, from the shapes the job feeds (one call per table per step).
    expect_act = {"wte": ([B, T, D], B * T * D * FP32), "wpe": ([T, D], T * D * FP32), "tags": ([B, D], B * D * FP32)}
    for name, (shape, nbytes) in expect_act.items():
        a = tables[name]["activation"]
        check(a == {"output_bytes": nbytes, "grad_bytes": nbytes, "peak_bytes": 2 * nbytes, "calls": 1, "shape": shape,
                    "dtype": "fp32"}, "%s activation %r, expected %r bytes of shape %r" % (name, a, nbytes, shape))
    check(rep["memory"]["activation_peak_bytes"] == 2 * sum(n for _, n in expect_act.values()),
          "memory.activation_peak_bytes %r" % rep["memory"]["activation_peak_bytes"])

    # Point 1: the family.
    h = tables["wte"]["lm_head"]
    check(h is not None, "no lm_head on the token table: %r" % tables["wte"])
    for other in ("wpe", "tags"):
        check(tables[other]["lm_head"] is None, "%s has a head: %r" % (other, tables[other]["lm_head"]))
    check((h["name"], h["rows"], h["dim"], h["dtype"]) == ("lm_head", V, D, "fp32"), "head %r" % h)
    check((h["dense_reads_per_step"], h["dense_read_bytes_per_step"]) == (1, head_bytes), "head reads %r" % h)
    if case == "untied":
        # AdamW keeps exp_avg and exp_avg_sq of the weight's shape and dtype (and a one-element
        # step, which is not state memory): 2 x V x D x 4 bytes.
        check(h["tied"] is False, "untied head reported tied: %r" % h)
        check((h["weight_bytes"], h["grad_bytes"], h["optimizer_bytes"]) == (head_bytes, head_bytes, 2 * head_bytes),
              "head bytes %r, expected %d, %d, %d" % (h, head_bytes, head_bytes, 2 * head_bytes))
        check(h["optimizer_state"] == {"adamw.exp_avg": head_bytes, "adamw.exp_avg_sq": head_bytes}, "state %r" % h)
        check(h["total_bytes"] == 4 * head_bytes and rep["memory"]["lm_head_bytes"] == 4 * head_bytes, "totals %r" % rep["memory"])
        check("lm_head" not in tables, "an untied head became a table: %r" % sorted(tables))
        check("lm_head (untied)" in text and "wte + lm_head: 250.00 KiB" in text, "text report:\n" + text)
    else:
        check(h["tied"] is True and h["total_bytes"] == 0 and rep["memory"]["lm_head_bytes"] == 0, "tied head %r" % h)
        check(tables["lm_head"]["lm_head_of"] == "wte" and tables["lm_head"]["shares_weights_of"] == "wte",
              "the tied head's table %r" % tables["lm_head"])
        check(tables["wte"]["dense_use"] is not None, "no dense use on a tied token table")
        check(tables["wte"]["grad_bytes"] == head_bytes and tables["wte"]["optimizer_bytes"] == 2 * head_bytes,
              "the tied token table's gradient / state %r" % tables["wte"])
        check("lm_head (tied)" in text, "text report:\n" + text)
    check("4 x 12 x 16 fp32" in text and "language model" in text, "text report:\n" + text)
    print("OK llm family (%s)" % case)


if __name__ == "__main__":
    main()
