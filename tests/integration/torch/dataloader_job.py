"""A training loop whose DataLoader workers (fork) read a table the Dataset owns, and inherit
the model's table, which the main process reads before and during the loop.

    dataloader_job.py --ground-truth FILE

Writes the lookups it fed per table (the Dataset's table by its module, the model's by name).
"""
import argparse
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ITEMS = 64


class FeatureDataset(Dataset):
    """Owns a 1000 x 16 table (62.5 KiB) that every __getitem__ reads two rows of."""

    def __init__(self):
        self.emb = nn.Embedding(1000, 16)

    def __len__(self):
        return ITEMS

    @staticmethod
    def rows(i):
        return [i % 1000, (i * 7) % 1000]

    def __getitem__(self, i):
        with torch.no_grad():
            return self.emb(torch.tensor(self.rows(i)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(500, 8)
        # a long qualified name: the report prints it whole
        self.encoder = nn.ModuleDict({"relative_position_bucket_embeddings_of_the_first_layer": nn.Embedding(64, 4)})

    def forward(self, x):
        pos = self.encoder["relative_position_bucket_embeddings_of_the_first_layer"](x % 64)
        return self.user(x).sum() + pos.sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ground-truth", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model()
    fed = {"user": 0, "encoder.relative_position_bucket_embeddings_of_the_first_layer": 0, "dataset": 0}
    x = torch.randint(0, 500, (8,))
    model(x)                       # registered before the workers fork: they inherit it
    fed["user"] += 8
    fed["encoder.relative_position_bucket_embeddings_of_the_first_layer"] += 8
    loader = DataLoader(FeatureDataset(), batch_size=8, num_workers=2)
    for batch in loader:
        x = torch.randint(0, 500, (8,))
        model(x)
        fed["user"] += 8
        fed["encoder.relative_position_bucket_embeddings_of_the_first_layer"] += 8
        fed["dataset"] += batch.shape[0] * batch.shape[1]
    json.dump({"lookups": fed}, open(args.ground_truth, "w"))


if __name__ == "__main__":
    main()
