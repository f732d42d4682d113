"""One "node" of a data-parallel job of NODES x 2 gloo ranks on 127.0.0.1, started the way
torchrun starts a node's ranks: each an exec'ed process with the variables torchrun sets
(TORCHELASTIC_RUN_ID, MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, GROUP_RANK,
LOCAL_WORLD_SIZE). Debian's torchrun fails under Python 3.11, so this launcher stands in.

    multinode_job.py --node N --nodes M --port P --run-id ID --ground-truth PREFIX

Every rank trains a DDP model (one table, the same on every rank) and reads a side table a
rank-dependent number of times (so the ranks are unbalanced), then writes what it read to
PREFIX.rank<R> (JSON: {"rank", "lookups": {"model": n, "side": n}}).
"""
import argparse
import json
import os
import subprocess
import sys

STEPS = 3
LOCAL = 2


def node(args):
    procs = []
    for local in range(LOCAL):
        rank = args.node * LOCAL + local
        env = dict(os.environ, TORCHELASTIC_RUN_ID=args.run_id, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                   WORLD_SIZE=str(args.nodes * LOCAL), RANK=str(rank), LOCAL_RANK=str(local),
                   GROUP_RANK=str(args.node), LOCAL_WORLD_SIZE=str(LOCAL))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank-of", args.ground_truth],
                                      env=env))
    codes = [p.wait() for p in procs]
    if any(codes):
        print("ranks failed: %s" % codes, file=sys.stderr)
        sys.exit(1)


def rank_main(gt_prefix):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Embedding(500, 8)))
    side = nn.Module()
    side.table = nn.Embedding(64, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    fed = {"model": 0, "side": 0}
    streams = {"model": [], "side": []}  # every index in the order read (the union LRU's ground truth)
    for _ in range(STEPS):
        opt.zero_grad()
        idx = torch.randint(0, 500, (16,))
        model(idx).sum().backward()
        opt.step()
        n = 2 + 3 * rank  # rank-dependent: the busiest rank is the last
        side_idx = torch.randint(0, 64, (n,))
        with torch.no_grad():
            side.table(side_idx)
        fed["model"] += 16
        fed["side"] += n
        streams["model"] += idx.tolist()
        streams["side"] += side_idx.tolist()
    dist.barrier()
    dist.destroy_process_group()
    with open("%s.rank%d" % (gt_prefix, rank), "w") as f:
        json.dump({"rank": rank, "lookups": fed, "streams": streams}, f)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rank-of":
        rank_main(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--run-id", required=True)
    ap.add_argument("--ground-truth", required=True)
    node(ap.parse_args())


if __name__ == "__main__":
    main()
