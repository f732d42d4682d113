#!/usr/bin/env python3
"""edo vs PyTorch embedding_bag, side by side, on the same shapes.

For every shape (default 10M x 128 and 1M x 128, uniform and Zipf 1.05, 2 threads) it runs
`edo bench --json --strategies fp32,int8,int4` and the torch anchor
(torch_embedding_bag.py under Debian's /usr/bin/python3, torch.set_num_threads(2)) and prints
edo's fp32 bag rows/s beside torch's, the ratio, and the int8/int4 speed-ups over fp32.

  bench/kernels/compare_torch.py [--edo build/bin/edo] [--shapes 10M,1M] [--threads 2]
                                 [--dists uniform,zipf] [--backend cpu|cuda] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_rows(s):
    mult = {"M": 1_000_000, "K": 1_000}.get(s[-1], 1)
    return int(float(s.rstrip("MK")) * mult)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--edo", default=os.path.join(HERE, "..", "..", "build", "bin", "edo"))
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter that has torch")
    ap.add_argument("--shapes", default="10M,1M")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--dists", default="uniform,zipf")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--strategies", default="fp32,int8,int4")
    ap.add_argument("--json", help="write all raw results here")
    a = ap.parse_args()
    rows_out = []
    raw = []
    for shape in a.shapes.split(","):
        rows = parse_rows(shape)
        for dist in a.dists.split(","):
            dist_args = ["--uniform"] if dist == "uniform" else ["--zipf", "1.05"]
            common = ["--rows", str(rows), "--dim", str(a.dim), "--batch", str(a.batch), "--reps", str(a.reps)] + dist_args
            print(f"== {a.backend} {shape} x {a.dim} {dist}: edo bench ...", file=sys.stderr, flush=True)
            edo = subprocess.run([a.edo, "bench", "--json", "-q", "--backend", a.backend, "--threads", str(a.threads),
                                  "--strategies", a.strategies] + common, capture_output=True, text=True)
            if edo.returncode != 0:
                print(edo.stderr.strip(), file=sys.stderr)
                return edo.returncode
            ej = json.loads(edo.stdout)
            print(f"== {a.backend} {shape} x {a.dim} {dist}: torch ...", file=sys.stderr, flush=True)
            tr = subprocess.run([a.python, os.path.join(HERE, "torch_embedding_bag.py"), "--json", "--device", a.backend,
                                 "--threads", str(a.threads)] + common, capture_output=True, text=True)
            if tr.returncode != 0:
                print(tr.stderr.strip(), file=sys.stderr)
                return tr.returncode
            tj = json.loads(tr.stdout)
            raw.append({"edo": ej, "torch": tj})
            res = {r["strategy"]: r for r in ej["results"]}
            f32 = res.get("fp32")
            tb = tj["embedding_bag_sum_rows_per_s"]
            line = {
                "shape": f"{shape}x{a.dim}", "dist": dist, "anchor": ej["anchor"],
                "edo_fp32_bag": f32["bag_rows_per_s"] if f32 else None, "torch_bag": tb,
                "edo_fp32_gather": f32["gather_rows_per_s"] if f32 else None,
                "torch_index_select": tj["index_select_rows_per_s"],
                "others": {k: v["bag_rows_per_s"] for k, v in res.items() if k != "fp32"},
            }
            rows_out.append(line)
    print(f"\n{'shape':<11} {'dist':<8} {'anchor GB/s':>11} {'edo fp32 bag':>13} {'torch bag':>10} {'edo/torch':>9} "
          f"{'fp32 GB/s':>9} {'vs anchor':>9}   quantised bag vs edo fp32")
    for l in rows_out:
        e, t = l["edo_fp32_bag"], l["torch_bag"]
        gbs = e * a.dim * 4 / 1e9 if e else 0
        q = "  ".join(f"{k} {v / e:.2f}x" for k, v in l["others"].items()) if e else ""
        print(f"{l['shape']:<11} {l['dist']:<8} {l['anchor']['gbs']:>11.1f} {e / 1e6:>10.1f} M/s {t / 1e6:>6.1f} M/s "
              f"{e / t:>8.2f}x {gbs:>9.1f} {gbs / l['anchor']['gbs']:>8.2f}x   {q}")
    print("(rows/s medians; GB/s = row bytes read; edo and torch both use "
          f"{a.threads} threads; torch is embedding_bag mode=sum, {raw[0]['torch']['torch'] if raw else ''})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"schema": "edo.compare_torch/1", "summary": rows_out, "raw": raw}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
