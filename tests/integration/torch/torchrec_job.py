#!/usr/bin/env python3
"""A TorchRec EmbeddingBagCollection job for torchrec_export_test.py: the stand-in torchrec
package (tests/unit/tuner/fake_torchrec, written from pytorch/torchrec a48cef79's signatures)
over real nn.EmbeddingBag modules, trained for --steps steps with Adagrad (--infer: served, one
edo.step() a batch, as a serving job marks its steps). Feature lengths are
random (seeded), so the pooling factors are the job's, not a constant. At the end it prints
`torchrec_job: ` + JSON {config name: {"features", "lookups", "bags", "steps", "batch",
"feature_lookups", "feature_bags"}} (the last two per feature, in feature order), the ground
truth the test compares the export with. --ids-out FILE: JSON {config name: every id the table
read, in order}, for exact LRU replays and the index distribution FBGEMM's own estimator fits.

    torchrec_job.py [--stand-in DIR] [--steps N] [--batch B] [--infer] [--ids-out FILE]

Without --stand-in it imports the real torchrec (a Python with torch 2.x, torchrec and
fbgemm-gpu-cpu: scripts/torchrec-venv.sh).
"""

import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stand-in", default="")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--infer", action="store_true")
    ap.add_argument("--ids-out", default="")
    a = ap.parse_args()
    if a.stand_in:
        sys.path.insert(0, a.stand_in)
    import torch
    from torch import nn
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    torch.manual_seed(7)
    tables = [
        EmbeddingBagConfig(name="t_user", num_embeddings=20000, embedding_dim=16,
                           feature_names=["user_id", "user_history"]),
        EmbeddingBagConfig(name="t_item", num_embeddings=5000, embedding_dim=16, feature_names=["item_id"],
                           pooling=PoolingType.MEAN),
        EmbeddingBagConfig(name="t_geo", num_embeddings=1000, embedding_dim=8),   # features: [name]
    ]
    # Mean ids a bag, per feature: what the export's pooling_factors must find again.
    mean_len = {"user_id": 1, "user_history": 9, "item_id": 4, "t_geo": 2}

    class SparseArch(nn.Module):
        def __init__(self):
            super().__init__()
            self.ebc = EmbeddingBagCollection(tables=tables)

        def forward(self, kjt):
            return self.ebc(kjt)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.sparse_arch = SparseArch()
            self.top = nn.Linear(16 + 16 + 16 + 8, 1)

        def forward(self, kjt):
            return self.top(self.sparse_arch(kjt).values())

    model = Model()
    opt = None if a.infer else torch.optim.Adagrad(model.parameters(), lr=0.05)
    try:
        import edo  # the package edo record puts on PYTHONPATH
    except ImportError:
        edo = None
    rows = {c.name: c.num_embeddings for c in tables}
    truth = {c.name: {"features": list(c.feature_names), "lookups": 0, "bags": 0, "steps": a.steps,
                      "batch": a.batch, "feature_lookups": [0] * len(c.feature_names),
                      "feature_bags": [0] * len(c.feature_names)} for c in tables}
    read = {c.name: [] for c in tables}
    table_of = {f: c.name for c in tables for f in c.feature_names}
    keys = [f for c in tables for f in c.feature_names]
    for _ in range(a.steps):
        lengths, values = [], []
        for f in keys:
            m = mean_len[f]
            lens = torch.randint(0, 2 * m + 1, (a.batch,)) if m > 1 else torch.ones(a.batch, dtype=torch.int64)
            n = int(lens.sum())
            # Zipf-like ids: a few hot rows, a long tail.
            ids = (torch.rand(n) ** 3 * rows[table_of[f]]).long()
            lengths.append(lens)
            values.append(ids)
            t = truth[table_of[f]]
            t["lookups"] += n
            t["bags"] += a.batch
            t["feature_lookups"][t["features"].index(f)] += n
            t["feature_bags"][t["features"].index(f)] += a.batch
            read[table_of[f]].append(ids)
        kjt = KeyedJaggedTensor(keys=keys, values=torch.cat(values), lengths=torch.cat(lengths))
        if a.infer:
            with torch.no_grad():
                model(kjt)
            if edo is not None:
                edo.step()
            continue
        loss = model(kjt).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if a.ids_out:
        with open(a.ids_out, "w") as f:
            json.dump({n: torch.cat(v).tolist() for n, v in read.items()}, f)
    print("torchrec_job: " + json.dumps(truth))
    return 0


if __name__ == "__main__":
    sys.exit(main())
