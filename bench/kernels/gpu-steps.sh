#!/usr/bin/env bash
# edo-gpu-step-limit: 240
# GPU steps of the strategy kernels' speed (run by scripts/gpu-check.sh, or alone on a GPU
# machine; results under $RESULTS, $OUT, else bench/results/):
#   1. the binaries: the bundle scripts/gpu-bundle.sh built, or a build for sm_90 ($EDO_BUILD)
#   2. the CUDA strategy benchmark (bench_kernels = `edo bench`'s library; edo.bench/1 JSON and
#      its text, each strategy beside its bound from the same run): 10M x 128 uniform and
#      Zipf 1.05 for the row formats (issue 10's table), 1M x 128 Zipf for every strategy
#      (offload: hit rate, miss bandwidth vs the host-to-device copy); batches of 2M indices
#   3. the torch CUDA anchor (embedding_bag sum) on 10M x 128 uniform, fp32 / fp16 / bf16
#   4. the summary against the targets: row formats >= 0.7x their bound (fp32 ~0.95x),
#      fp16 level with bf16, every other strategy >= 0.5x, offload misses >= 0.5x h2d, and
#      edo's bag vs torch's
# About 3 minutes on an H200 with 16 CPU cores (the host encodes 10M-row tables). EDO_GPU_QUICK=1
# runs the 1M shape only.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-${BUILD:-$ROOT/build-gpu}}
PY=${PYTHON:-python3}
BATCH=${BATCH:-2097152}   # 2M indices per batch = 65536 bags of 32: enough work per launch
THREADS=$(nproc 2>/dev/null || echo 8)
log() { echo "kernels gpu-steps (bench): $*" >&2; }

. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/kernels-gpu-build.log" bench_kernels || { log "no binaries to run"; exit 1; }

if ! dev=$("$BUILD/bin/bench_kernels" --device-status); then
  echo "SKIP kernels bench gpu steps: $dev"
  exit 0
fi
log "device: $dev"
status=0
run_bench() {  # run_bench TAG ARGS...
  local tag=$1
  shift
  log "bench_kernels --backend cuda $tag"
  "$BUILD/bin/bench_kernels" --backend cuda --threads "$THREADS" --reps 7 --batch "$BATCH" --json "$RES/edo-bench-cuda-$tag.json" "$@" \
    >"$RES/edo-bench-cuda-$tag.txt" 2>"$RES/edo-bench-cuda-$tag.log" || { log "$tag failed: $(tail -n1 "$RES/edo-bench-cuda-$tag.log")"; status=1; }
}
rows="fp32,fp16,bf16,fp8,int8,int4"
if [[ -z ${EDO_GPU_QUICK:-} ]]; then
  run_bench 10000000x128-uniform --shapes 10M --strategies "$rows"
  run_bench 10000000x128-zipf --shapes 10M --zipf --strategies "$rows"
fi
run_bench 1000000x128-zipf --shapes 1M --zipf --strategies all

if "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  shape=$([[ -z ${EDO_GPU_QUICK:-} ]] && echo 10000000 || echo 1000000)
  for dt in float32 float16 bfloat16; do
    log "torch cuda anchor ${shape}x128 uniform $dt"
    "$PY" bench/kernels/torch_embedding_bag.py --device cuda --dtype $dt --json --rows "$shape" --dim 128 --batch "$BATCH" --threads "$THREADS" \
      --pooling 32 --uniform --reps 7 >"$RES/torch-cuda-${shape}x128-uniform-$dt.json" || status=1
  done
else
  log "python3 has no torch with CUDA: torch anchor skipped"
fi

"$PY" - "$RES" <<'PYEOF' | tee "$RES/kernels-gpu-summary.txt"
import glob, json, os, sys
res = sys.argv[1]
torch = {}
for f in glob.glob(os.path.join(res, "torch-cuda-*.json")):
    try:
        t = json.load(open(f))
        torch[(t["rows"], t["distribution"], t["dtype"])] = t["embedding_bag_sum_rows_per_s"]
    except Exception as e:
        print("unreadable", f, e)
dtype = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
rowf = {"fp32", "fp16", "bf16", "fp8", "int8", "int4"}
missed = []
print(f"{'shape':<24} {'strategy':<28} {'bag G rows/s':>12} {'bound':>8} {'ratio':>6} {'target':>7}  notes")
for f in sorted(glob.glob(os.path.join(res, "edo-bench-cuda-*.json"))):
    tag = os.path.basename(f)[len("edo-bench-cuda-"):-5]
    try:
        runs = json.load(open(f))
    except Exception as e:
        print(tag, "unreadable:", e); continue
    for j in runs if isinstance(runs, list) else [runs]:
        a = j["anchor"]
        print(f"{tag}: d2d copy {a.get('gbs', 0):.0f} GB/s, h2d {a.get('h2d_gbs', 0):.1f} GB/s, shared memory {a.get('onchip_gbs', 0):.0f} GB/s")
        by = {r["strategy"]: r for r in j["results"]}
        for r in j["results"]:
            ratio = r.get("bag_vs_bound", 0)
            target = 0.7 if r["strategy"] in rowf else 0.5
            notes = []
            if r["strategy"] == "fp16" and "bf16" in by:
                notes.append(f"vs bf16 {r['bag_rows_per_s'] / by['bf16']['bag_rows_per_s']:.2f}x")
            key = (j["config"]["rows"], j["config"]["distribution"], dtype.get(r["strategy"], ""))
            if key in torch:
                notes.append(f"vs torch {r['bag_rows_per_s'] / torch[key]:.2f}x")
            if "hit_rate" in r:
                notes.append(f"hit {r['hit_rate']:.3f}, misses {r['miss_gbs']:.1f} GB/s = {r.get('miss_vs_h2d', 0):.2f}x h2d (target 0.5x)")
            ok = ratio >= target
            if not ok:
                missed.append(f"{tag} {r['spec']}")
            print(f"{tag:<24} {r['spec']:<28} {r['bag_rows_per_s'] / 1e9:>12.2f} {r['bound_rows_per_s'] / 1e9:>8.2f} {ratio:>5.2f}x {target:>6.2f}x  {'MET' if ok else 'MISSED'} {'; '.join(notes)}")
print("targets (issue 10): row formats >= 0.70x their bound, others >= 0.50x, fp16 level with bf16, offload misses >= 0.5x h2d")
print("missed:", ", ".join(missed) if missed else "none")
PYEOF
log "results in $RES"
exit $status
