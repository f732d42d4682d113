#!/usr/bin/env python3
"""A small PyTorch CUDA training job for the tracer's GPU checks (torch_gpu_checks.py).

    workload.py --out FILE [--steps N] [--profile]

Trains an nn.Embedding ("model.emb") and a frozen nn.EmbeddingBag ("model.bag") with Adam on
CUDA, seeded, deterministic algorithms requested, and writes a JSON summary to FILE: the
SHA-256 of every parameter's bytes and the losses (the same with and without edo when the
job is reproducible at all), torch.cuda.max_memory_allocated(), the first launch's
cudaGetLastError-equivalent check, and with --profile the CUDA kernel events torch.profiler saw.
"""
import argparse
import hashlib
import json
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20000, 64)
        self.bag = nn.EmbeddingBag(5000, 32, mode="sum")
        self.bag.weight.requires_grad_(False)  # its backward has no deterministic CUDA kernel
        self.mlp = nn.Linear(96, 1)

    def forward(self, ids, bag_ids, offsets):
        return self.mlp(torch.cat([self.emb(ids), self.bag(bag_ids, offsets)], dim=1)).squeeze(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    prof = None
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.start()
    # The reproducer of issue 9: the first kernel of a job under `edo record`.
    first = torch.randint(0, 10, (5,), device=dev)
    torch.cuda.synchronize()
    m = Model().to(dev)
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad], lr=1e-2)
    g = torch.Generator(device=dev).manual_seed(1)
    losses = []
    for _ in range(a.steps):
        ids = (torch.rand(8192, device=dev, generator=g) ** 3 * 20000).long()
        bag_ids = torch.randint(0, 5000, (8192 * 4,), device=dev, generator=g)
        offsets = torch.arange(0, 8192 * 4, 4, device=dev)
        y = torch.rand(8192, device=dev, generator=g)
        loss = ((m(ids, bag_ids, offsets) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    kernels = None
    if prof is not None:
        prof.stop()
        kernels = sum(1 for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA"))
    h = hashlib.sha256()
    for name, p in sorted(m.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    out = {"sha256": h.hexdigest(), "losses": losses, "first": first.cpu().tolist(),
           "max_memory_allocated": torch.cuda.max_memory_allocated(),
           "profiler_cuda_events": kernels, "torch": torch.__version__}
    with open(a.out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
