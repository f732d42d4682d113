#!/usr/bin/env python3
"""Loads a file written by `edo export --format fbgemm-bench` with fbgemm_gpu's own benchmark
configuration class (fbgemm_gpu.tbe.bench.TBEDataConfig.from_json, fbgemm-gpu 1.9.0; it
validates on construction) and runs FBGEMM's index-distribution estimator
(torch.ops.fbgemm.tbe_estimate_indices_distribution) on the ids the job read (torch.save of
{config name: ids} as JSON, torchrec_job.py --ids-out). Prints JSON: per table what the config holds and
what FBGEMM's estimator found. Needs torch and fbgemm_gpu; exits 77 without them.

    check_fbgemm_bench.py BENCH.json IDS.json
"""

import contextlib
import io
import json
import os
import sys


def main():
    try:
        import importlib.util
        import types
        import torch
        import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
        # fbgemm_gpu.tbe.bench's __init__ imports its command-line front ends (click), which a
        # planning environment need not have: the package is entered without its __init__, and
        # TBEDataConfig comes from its own module file, unchanged.
        if "fbgemm_gpu.tbe.bench" not in sys.modules:
            import fbgemm_gpu.tbe
            bench_pkg = types.ModuleType("fbgemm_gpu.tbe.bench")
            bench_pkg.__path__ = [os.path.join(os.path.dirname(fbgemm_gpu.tbe.__file__), "bench")]
            sys.modules["fbgemm_gpu.tbe.bench"] = bench_pkg
        from fbgemm_gpu.tbe.bench.tbe_data_config import TBEDataConfig
    except ImportError as e:
        print("check_fbgemm_bench: skipped: %s" % e)
        return 77
    bench = json.load(open(sys.argv[1]))
    ids = {n: torch.tensor(v, dtype=torch.int64) for n, v in json.load(open(sys.argv[2])).items()}
    out = {}
    for name, table in bench["tables"].items():
        cfg = TBEDataConfig.from_json(json.dumps(table["config"]))
        cfg.validate()
        config_name = name.rsplit(".", 1)[-1]
        # FBGEMM's estimator prints its sweep on stdout (through C++ std::cout): kept off ours.
        fd = os.dup(1)
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(io.StringIO()):
            sys.stdout.flush()
            os.dup2(null.fileno(), 1)
            try:
                hh, q, s, _, _ = torch.ops.fbgemm.tbe_estimate_indices_distribution(ids[config_name].long())
            finally:
                os.dup2(fd, 1)
                os.close(fd)
        # The file's numbers (TBEDataConfig keeps them as float32: checked to float32's precision).
        mine = table["config"]["indices_params"]["heavy_hitters"]
        if (cfg.indices_params.heavy_hitters.double() - torch.tensor(mine, dtype=torch.float64)).abs().max() > 1e-6:
            raise SystemExit("TBEDataConfig's heavy hitters differ from the file's")
        theirs = hh.double().tolist()
        out[name] = {
            "T": cfg.T, "E": cfg.E, "D": cfg.D, "Bs": cfg.batch_params.Bs, "Ls": cfg.pooling_params.Ls,
            "edo": {"heavy_hitters": mine, "q": cfg.indices_params.zipf_q, "s": cfg.indices_params.zipf_s},
            "fbgemm": {"heavy_hitters": theirs, "q": q, "s": s},
            "heavy_hitters_diff": max((abs(a - b) for a, b in zip(mine, theirs)), default=0.0),
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
