#!/usr/bin/env python3
"""A small GPT-like language model trained on real text with a real BPE tokenizer (issue 33).

The tokenizer is a byte-level BPE trained here with Hugging Face's `tokenizers` package on text
that ships with every Debian machine (the licences under /usr/share/common-licenses and the
Python standard library's sources), so token frequencies are natural, not drawn from a law.
The model is a token table, a position table, two transformer blocks and an LM head, trained
with AdamW on random windows of the tokenized text:

    --config tied      vocabulary of the trained tokenizer (4,096), D = 64, head tied to the table
    --config untied    the same with the head its own nn.Linear (V x D)
    --config llama3    a table of Llama-3's vocabulary size (128,256 rows), D = 16, untied head;
                       the tokenizer trained on this corpus uses the first ids only, as a model
                       with a large general vocabulary does on a narrow domain

It knows nothing about edo. Run it under the profiler with
    edo record -o run.edodb -- python3 examples/gpt_bpe.py --config untied
--ids FILE writes the token ids fed to the token table, in the order fed (one line, spaces),
--outputs FILE the configuration, the tokenizer's vocabulary size and the losses (JSON),
--tokenizer FILE the trained tokenizer (tokenizer.json, loadable with tokenizers.Tokenizer.from_file).
--apply-plan PLAN applies an `edo tune` plan with edo.apply_plan before the first step (the edo
package must be importable), giving it the optimizer, agreeing to tie the head, and, with
--vocab-remap FILE (`edo export --format vocab-remap`), to trim the vocabulary; the targets then
go through the same remap. --outputs then also holds what apply_plan did and the bytes PyTorch
holds for the token table and the head after the last step.

`tokenizers` comes from PyPI: scripts/tokenizers-venv.sh makes a virtual environment with it
on top of Debian's python3-torch.
"""

import argparse
import glob
import json
import os
import sys

try:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
except ImportError:
    sys.stderr.write("gpt_bpe.py: the 'tokenizers' package is missing: run scripts/tokenizers-venv.sh and use its python "
                     "(build/tokenizers-venv/bin/python)\n")
    sys.exit(3)

import torch
import torch.nn as nn

# The transformer block of the bundled LLM-like job: causal self-attention and an MLP, pre-norm
# (this folder is on sys.path when the example runs).
from llm_like import Block

CONFIGS = {
    # name: (table rows or None for the tokenizer's vocabulary, D, heads, tied)
    "tied": (None, 64, 4, True),
    "untied": (None, 64, 4, False),
    "llama3": (128256, 16, 2, False),
}
TOKENIZER_VOCAB = 4096
EOT = "<|endoftext|>"
CORPUS_BYTES = 1_500_000


def corpus_files():
    """The licences, then the standard library's top-level sources, sorted: the same files on
    every Debian 12 machine, up to CORPUS_BYTES."""
    files, total = [], 0
    cands = sorted(glob.glob("/usr/share/common-licenses/*")) + sorted(glob.glob("/usr/lib/python3*/*.py"))
    for f in cands:
        if not os.path.isfile(f):
            continue
        files.append(f)
        total += os.path.getsize(f)
        if total >= CORPUS_BYTES:
            break
    if not files:
        sys.stderr.write("gpt_bpe.py: no text found under /usr/share/common-licenses or /usr/lib/python3*\n")
        sys.exit(2)
    return files


def train_tokenizer(files, vocab):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train(files, trainer)
    return tok


def token_stream(tok, files):
    eot = tok.token_to_id(EOT)
    ids = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            ids.extend(tok.encode(fh.read()).ids)
        ids.append(eot)
    return torch.tensor(ids, dtype=torch.int64)


class GPT(nn.Module):
    def __init__(self, vocab, dim, heads, seq, tied):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        with torch.no_grad():
            nn.init.normal_(self.wte.weight, std=0.02)
            nn.init.normal_(self.wpe.weight, std=0.02)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        return self.lm_head(self.ln_f(self.blocks(x)))


def _nbytes(t):
    """Bytes a tensor holds (a sparse gradient: its values and its int64 indices)."""
    parts = [] if t is None else [t._values(), t._indices()] if t.is_sparse else [t]
    return sum(p.numel() * p.element_size() for p in parts)


def held_bytes(model, opt):
    """What PyTorch holds for the token table and the head: weights, gradients, the optimizer's
    per-element state (not its step counter) and buffers (a trimmed table's id remap)."""
    out = {}
    for name, mod in (("wte", model.wte), ("lm_head", model.lm_head)):
        w = mod.weight
        tied = name == "lm_head" and w is model.wte.weight
        state = sum(_nbytes(v) for v in opt.state.get(w, {}).values() if isinstance(v, torch.Tensor) and v.dim() > 0)
        out[name] = {"rows": int(w.shape[0]), "tied": tied, "weight": 0 if tied else _nbytes(w),
                     "grad": 0 if tied else _nbytes(w.grad), "state": 0 if tied else state,
                     "buffers": sum(_nbytes(b) for b in mod.buffers(recurse=False))}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="untied")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ids", help="write the token ids fed to the token table, in order")
    ap.add_argument("--outputs", help="write the configuration, vocabulary sizes and losses (JSON)")
    ap.add_argument("--tokenizer", help="write the trained tokenizer (tokenizer.json)")
    ap.add_argument("--apply-plan", metavar="PLAN", help="edo.apply_plan(model, PLAN, ...) before the first step")
    ap.add_argument("--vocab-remap", metavar="FILE", help="the token table's remap, for a plan that trims the vocabulary")
    a = ap.parse_args()
    rows, dim, heads, tied = CONFIGS[a.config]
    torch.manual_seed(a.seed)
    files = corpus_files()
    tok = train_tokenizer(files, TOKENIZER_VOCAB)
    learned = tok.get_vocab_size()
    vocab = rows or learned
    stream = token_stream(tok, files)
    if a.tokenizer:
        tok.save(a.tokenizer)
    model = GPT(vocab, dim, heads, a.seq, tied)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    applied = None
    if a.apply_plan:
        import edo
        applied = edo.apply_plan(model, a.apply_plan, optimizer=opt, allow_tying=True, vocab_remap=a.vocab_remap)
        for name, e in applied.items():
            print("gpt_bpe: apply_plan %s: %s%s, applied %s: %s" % (name, e["strategy"], "+" + e["optimizer"] if e["optimizer"] else "",
                                                                   e["applied"], e["why"]), file=sys.stderr)
    # A trimmed vocabulary's logits are over the new ids: the targets take the same remap.
    target_remap = getattr(model.lm_head, "edo_vocab_remap", None)
    gen = torch.Generator().manual_seed(a.seed)
    fed, losses = [], []
    for _ in range(a.steps):
        starts = torch.randint(0, len(stream) - a.seq - 1, (a.batch,), generator=gen)
        win = torch.stack([stream[s:s + a.seq + 1] for s in starts.tolist()])
        x, y = win[:, :-1], win[:, 1:]
        if target_remap is not None:
            y = target_remap[y]
        if a.ids:
            fed.append(x.reshape(-1))
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    if a.ids:
        with open(a.ids, "w") as f:
            f.write(" ".join(str(int(i)) for i in torch.cat(fed).tolist()) + "\n")
    if a.outputs:
        with open(a.outputs, "w") as f:
            json.dump({"config": a.config, "rows": vocab, "dim": dim, "tied": tied, "tokenizer_vocab": learned,
                       "corpus_files": len(files), "corpus_tokens": len(stream), "batch": a.batch, "seq": a.seq,
                       "steps": a.steps, "losses": losses, "applied": applied and {
                           n: {k: v for k, v in e.items() if isinstance(v, (str, int, float, bool))} for n, e in applied.items()},
                       "held": held_bytes(model, opt)}, f)
    print("gpt_bpe %s: %d rows x %d, tokenizer %d ids, %d corpus tokens, loss %.3f -> %.3f" %
          (a.config, vocab, dim, learned, len(stream), losses[0], losses[-1]))


if __name__ == "__main__":
    main()
