"""A PyTorch job for weight-snapshot tests: two embedding tables (one tied to an LM head), a few
steps of training, then the weights are written next to OUT (argv[1]) as raw float32, row-major
(OUT.emb, OUT.bag), so the test can compare the snapshot with them. Nothing edo-specific in
here: `edo record --weights` hands the weights over at exit."""
import sys

import torch

torch.manual_seed(3)
emb = torch.nn.Embedding(5000, 16)
bag = torch.nn.EmbeddingBag(300, 8, mode="sum")
head = torch.nn.Linear(16, 5000, bias=False)
head.weight = emb.weight  # tied
opt = torch.optim.Adam(list(emb.parameters()) + list(bag.parameters()), lr=0.01)
gen = torch.Generator().manual_seed(5)
for step in range(5):
    idx = (torch.randint(0, 50, (256,), generator=gen) ** 2) % 5000  # skewed toward small rows
    out = emb(idx).sum() + bag(torch.randint(0, 300, (64,), generator=gen), torch.arange(0, 64, 8)).sum()
    opt.zero_grad()
    out.backward()
    opt.step()
for name, w in (("emb", emb.weight), ("bag", bag.weight)):
    with open(sys.argv[1] + "." + name, "wb") as f:
        f.write(w.detach().contiguous().numpy().tobytes())
print("torch_weights_job done")
