"""An ordinary training script, as users write them: the model, its optimizer and a table
outside any module live in main() (freed when it returns, before the interpreter exits), and
a DataLoader's workers read a table the Dataset owns.

    ordinary_job.py --ground-truth FILE [--context fork|spawn] [--parent-reads]

--context: the DataLoader's multiprocessing context (spawn: the Dataset, its table included,
is pickled into each worker). --parent-reads: the main process reads the Dataset's table too.
Writes the lookups it fed per table name (edo's names: qualified names in the model, class and
shape for a table in no model).
"""
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ITEMS = 48


class FeatureDataset(Dataset):
    def __init__(self):
        self.emb = nn.Embedding(1000, 16)

    def __len__(self):
        return ITEMS

    def __getitem__(self, i):
        with torch.no_grad():
            return self.emb(torch.tensor([i % 1000, (i * 7) % 1000]))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(500, 8)
        self.item = nn.EmbeddingBag(300, 8, mode="sum")

    def forward(self, u, i):
        return (self.user(u) * self.item(i)).sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ground-truth", required=True)
    ap.add_argument("--context", default="fork", choices=["fork", "spawn"])
    ap.add_argument("--parent-reads", action="store_true")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model()
    # @EDO-PADDING@ (a second version of this script has more lines here)
    side = nn.Embedding(50, 4)    # in no model
    opt = torch.optim.Adam(list(model.parameters()) + list(side.parameters()), lr=0.01)
    dataset = FeatureDataset()
    fed = {"user": 0, "item": 0, "Embedding[50x4]": 0, "Embedding[1000x16]": 0}
    if args.parent_reads:
        dataset[3]
        fed["Embedding[1000x16]"] += 2
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context=args.context)
    for batch in loader:
        u = torch.randint(0, 500, (8,))
        i = torch.randint(0, 300, (8, 3))
        s = torch.randint(0, 50, (8,))
        loss = model(u, i) + side(s).sum() + batch.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        fed["user"] += 8
        fed["item"] += 24
        fed["Embedding[50x4]"] += 8
        fed["Embedding[1000x16]"] += batch.shape[0] * batch.shape[1]
    json.dump({"lookups": fed}, open(args.ground_truth, "w"))


if __name__ == "__main__":
    main()
