"""Two gloo ranks, as a launcher (torchrun-like) starts them: each an exec'ed process with
RANK / LOCAL_RANK / WORLD_SIZE set, a DistributedDataParallel model, a side table whose size
differs per rank, and a DataLoader worker that reads a table the Dataset owns.

    ranks_job.py --ground-truth FILE [--exit-code N]     (the launcher: starts both ranks)

The launcher exits with --exit-code (default 0) once both ranks succeeded.
"""
import argparse
import json
import os
import socket
import subprocess
import sys

STEPS = 4


def launcher(args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2",
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank-of",
                                       args.ground_truth], env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        print("ranks failed: %s" % codes, file=sys.stderr)
        sys.exit(1)
    sys.exit(args.exit_code)


def rank_main(gt_prefix):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader, Dataset

    class Items(Dataset):
        def __init__(self):
            self.emb = nn.Embedding(1000, 16)

        def __len__(self):
            return 16

        def __getitem__(self, i):
            with torch.no_grad():
                return self.emb(torch.tensor([i]))

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Embedding(200, 8)))
    # A different table per rank under one name ("table", its path in the module that holds
    # it; a table in no model is named by its shape, which differs here, and so would its name).
    side = nn.Module()
    side.table = nn.Embedding(100 if rank == 0 else 300, 4)
    opt = torch.optim.Adam(model.parameters())
    loader = DataLoader(Items(), batch_size=4, num_workers=1)
    fed = {"model": 0, "side": 0, "dataset": 0}
    for step, batch in enumerate(loader):
        if step >= STEPS:
            break
        opt.zero_grad()
        model(torch.randint(0, 200, (8,))).sum().backward()
        opt.step()
        side.table(torch.randint(0, 100, (3,)))
        fed["model"] += 8
        fed["side"] += 3
        fed["dataset"] += batch.shape[0]
    dist.destroy_process_group()
    json.dump({"rank": rank, "lookups": fed, "side_rows": 100 if rank == 0 else 300},
              open("%s.rank%d" % (gt_prefix, rank), "w"))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rank-of":
        rank_main(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--ground-truth", required=True)
    ap.add_argument("--exit-code", type=int, default=0)
    launcher(ap.parse_args())


if __name__ == "__main__":
    main()
