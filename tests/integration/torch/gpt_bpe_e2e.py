#!/usr/bin/env python3
"""Issue 33 points 6 and 7 at the user's level: examples/gpt_bpe.py (a small GPT trained on real
text with a BPE tokenizer) under `edo record`; the token table's vocabulary coverage in
`edo report --json` checked against an exact count of the ids the job itself wrote it fed
(fitted on the first 70 % of them, scored on the rest); the trim figures against what applying
`edo export --format vocab-remap`'s remap to the job's weights and ids produces; the remap file
read back.

    gpt_bpe_e2e.py CONFIG --build BUILD_DIR [--source SOURCE_DIR]     (CONFIG: tied, untied, llama3)

Needs the `tokenizers` package (PyPI): the job runs with $EDO_TEST_PYTHON, else
BUILD_DIR/tokenizers-venv/bin/python (scripts/tokenizers-venv.sh makes it), else
/usr/bin/python3; skipped with that advice when none has it.
"""

import json
import os
import subprocess
import sys
import tempfile

import edo_job_env
from edo_job_env import run, skip

STEPS = {"tied": 20, "untied": 20, "llama3": 8}
FP32 = 4


def check(cond, what):
    if not cond:
        sys.stderr.write("FAILED: %s\n" % what)
        sys.exit(1)


def job_python(build):
    for py in (os.environ.get("EDO_TEST_PYTHON"), os.path.join(build, "tokenizers-venv", "bin", "python"), "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run([py, "-c", "import torch, tokenizers"], capture_output=True).returncode == 0:
            return py
    skip("no python with both torch and the 'tokenizers' package: run scripts/tokenizers-venv.sh (build/tokenizers-venv), "
         "or set EDO_TEST_PYTHON to one")


def expected_coverage(ids, bp_targets, fit_fraction=0.7):
    """The exact answer: ids ranked by their count before the cut (most first, ties to the lower
    id), the fewest reaching each target, and their share of the lookups after the cut."""
    cut = int(fit_fraction * len(ids))  # floor, as the tuner cuts (same double arithmetic)
    fit, held = ids[:cut], ids[cut:]
    counts = {}
    for i in fit:
        counts[i] = counts.get(i, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    out = []
    for bp in bp_targets:
        cum, k = 0, 0
        for _, n in ranked:
            cum += n
            k += 1
            if cum * 10000 >= bp * len(fit):
                break
        kept = set(i for i, _ in ranked[:k])
        missed = sum(1 for i in held if i not in kept)
        out.append({"ids": k, "kept": kept, "fit_cov": cum / len(fit), "held_cov": (len(held) - missed) / len(held), "missed": missed})
    return cut, len(held), len(counts), out


def example_setup():
    """(CONFIG, build, edo, env, the job's python, examples/gpt_bpe.py) from the command line."""
    config = sys.argv[1]
    sys.argv = [sys.argv[0]] + sys.argv[2:]
    build, source, edo, _, env = edo_job_env.setup()
    return config, build, edo, env, job_python(build), os.path.join(source, "examples", "gpt_bpe.py")


def main():
    config, build, edo, env, py, job = example_setup()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "run.edodb")
        ids_file, out_file, remap_file = (os.path.join(tmp, n) for n in ("ids.txt", "out.json", "remap.json"))
        run([edo, "record", "-o", db, "--", py, job, "--config", config, "--steps", str(STEPS[config]), "--ids", ids_file,
             "--outputs", out_file], env=env)
        rep = json.loads(run([edo, "report", "--json", db], env=env).stdout)
        text = run([edo, "report", db], env=env).stdout
        run([edo, "export", db, "--format", "vocab-remap", "-o", remap_file], env=env)
        with open(remap_file) as f:
            remap = json.load(f)
        # A second export onto it: refused without --force, replaced with it.
        r = subprocess.run([edo, "export", db, "--format", "vocab-remap", "-o", remap_file], capture_output=True, text=True, env=env)
        check(r.returncode == 1 and "--force" in r.stderr, "overwrite without --force: %r" % ((r.returncode, r.stderr),))
        run([edo, "export", db, "--format", "vocab-remap", "-o", remap_file, "--force", "--coverage", "99", "--unk", "0"], env=env)
        with open(remap_file) as f:
            remap99 = json.load(f)
        with open(ids_file) as f:
            ids = [int(x) for x in f.read().split()]
        with open(out_file) as f:
            out = json.load(f)
    V, D = out["rows"], out["dim"]
    wte = {t["name"]: t for t in rep["tables"]}["wte"]
    vocab = wte["vocab"]
    check(vocab is not None and "unavailable" not in vocab, "no vocabulary coverage on wte: %r" % vocab)
    for other in ("wpe",):
        check({t["name"]: t for t in rep["tables"]}[other]["vocab"] is None, "a position table got a vocabulary")

    # Coverage against the exact count of what the job fed.
    cut, held, fit_ids, exp = expected_coverage(ids, [9900, 9990, 9999])
    check(vocab["exact"] and vocab["sample_rate"] == 1.0, "sampled order %r" % vocab)
    check((vocab["fit_lookups"], vocab["held_out_lookups"], vocab["fit_ids"]) == (cut, held, fit_ids),
          "split %r, expected %r" % (vocab, (cut, held, fit_ids)))
    for got, want in zip(vocab["coverage"], exp):
        check(got["ids"] == want["ids"] and got["held_out_missed_lookups"] == want["missed"], "coverage %r, expected %r" % (got, want))
        check(abs(got["fit_coverage"] - want["fit_cov"]) < 1e-12 and abs(got["held_out_coverage"] - want["held_cov"]) < 1e-12,
              "coverage %r, expected %r" % (got, want))

    # The remap, read back: the 99.9 % set, kept ids in their order, dropped ids to UNK.
    k999 = exp[1]
    check(remap["format"] == "edo.vocab_remap/1" and remap["table"] == "wte" and remap["rows"] == V, "remap header %r" % remap["rows"])
    check(set(remap["kept_old_ids"]) == k999["kept"] and remap["kept_old_ids"] == sorted(k999["kept"]), "kept ids differ from the exact fit")
    check(remap["unk"] == {"old_id": min(k999["kept"]), "new_id": 0, "added": False}, "unk %r" % remap["unk"])
    new_of, kept = remap["new_id_of_old"], remap["kept_old_ids"]
    check(len(new_of) == V and all(kept[new_of[i]] == i for i in kept), "new_id_of_old does not invert kept_old_ids")
    check(all(new_of[i] == 0 for i in range(V) if i not in k999["kept"]), "a dropped id not mapped to UNK")
    # Applied to the held-out ids as a data loader would: the loss is the ids that became UNK.
    lost = sum(1 for i in ids[cut:] if new_of[i] == remap["unk"]["new_id"] and i != remap["unk"]["old_id"])
    check(lost == k999["missed"] == remap["held_out_lost_lookups"] == vocab["trim"]["held_out_lost_lookups"],
          "lost %d, expected %d (remap %d)" % (lost, k999["missed"], remap["held_out_lost_lookups"]))
    check(remap99["coverage_target"] == 0.99 and set(remap99["kept_old_ids"]) == exp[0]["kept"] | {0} and
          remap99["unk"] == {"old_id": 0, "new_id": 0, "added": 0 not in exp[0]["kept"]}, "--coverage 99 --unk 0: %r" % remap99["unk"])

    # The trim's bytes against the trimmed model's: the kept rows of the table (and of an untied
    # head), with AdamW's two states and the gradient, as torch sizes them.
    # torch sizes the trimmed parameter (the job's python: the driver's may lack torch).
    probe = ("import json, sys, torch; r = json.load(open(sys.argv[1])); w = torch.zeros(%d, %d); "
             "t = w[torch.tensor(r['kept_old_ids'])]; print(t.shape[0], t.numel() * t.element_size(), w.numel() * w.element_size())" % (V, D))
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(remap, f)
        f.flush()
        trimmed_rows, trimmed_bytes, whole_bytes = map(int, run([py, "-c", probe, f.name], env=env).stdout.split())
    per_param = 4  # weight, gradient, exp_avg, exp_avg_sq: each of the parameter's shape and dtype
    t = vocab["trim"]
    check(t["kept_rows"] == len(kept) == trimmed_rows, "kept rows %r" % t)
    check(t["kept_weight_bytes"] == trimmed_bytes, "kept bytes %r" % t)
    check(whole_bytes == V * D * FP32 == wte["weight_bytes"], "table bytes %r" % wte["weight_bytes"])
    saved = per_param * (whole_bytes - trimmed_bytes)
    check(t["table_bytes_saved"] == saved, "table saved %d, expected %d" % (t["table_bytes_saved"], saved))
    check(t["head"] == ("tied" if out["tied"] else "untied"), "head %r" % t["head"])
    check(t["head_bytes_saved"] == (0 if out["tied"] else saved), "head saved %r" % t)
    check(t["needs_retraining"] is True, "trim without retraining")
    check("trim vocabulary to the 99.9 % set" in text and "vocabulary coverage" in text, "text report:\n" + text)
    print("OK gpt_bpe (%s): %d rows, %d of %d ids kept at 99.9 %%, %d held-out lookups lost" %
          (config, V, len(kept), fit_ids, lost))


if __name__ == "__main__":
    main()
