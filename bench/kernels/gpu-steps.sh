#!/usr/bin/env bash
# GPU steps of the strategy kernels. scripts/gpu-check.sh (on main) runs every
# bench/*/gpu-steps.sh with EDO_BUILD and RESULTS set; it also runs alone:
#
#   bench/kernels/gpu-steps.sh            # results under $RESULTS, $OUT, else bench/results/
#
# 1. builds edo_kernels for sm_90 (ARCH=.. to change) with the GPU tests and bench_kernels,
#    or uses the bundle scripts/gpu-bundle.sh built (no CMakeCache.txt in $EDO_BUILD)
# 2. runs the GPU tests (every CUDA kernel vs the CPU backend, outputs poisoned first)
# 3. runs the CUDA strategy benchmark (edo.bench/1 JSON, anchor: device-to-device copy) on
#    10M x 128 and 1M x 128, uniform and Zipf 1.05, with GPU-sized batches
# 4. runs the torch CUDA anchor (embedding_bag sum, index_select) on the same shapes
# 5. prints the ratios against the targets: fp32/fp16 gather and bag >= 85 % of d2d copy,
#    >= 1.2x torch
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-${BUILD:-$ROOT/build-gpu}}
ARCH=${ARCH:-90}
PY=${PYTHON:-python3}
BATCH=${BATCH:-2097152}   # 2M indices per batch = 65536 bags of 32: enough work per launch
log() { echo "gpu-steps: $*" >&2; }

log "build (sm_$ARCH) in $BUILD"
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/kernels-gpu-build.log" edo_kernels_gpu_tests bench_kernels ||
  { log "no binaries to run"; exit 1; }
# bench_kernels prints the same edo.bench/1 JSON as `edo bench` and needs only edo_kernels.

log "GPU tests"
"$BUILD/bin/edo_kernels_gpu_tests" --gtest_output="json:$RES/kernels-gpu-tests.json" 2>&1 | tee "$RES/kernels-gpu-tests.txt" | tail -5

status=0
for rows in 10000000 1000000; do
  # 10M: the row formats (the CUDA targets); 1M: every strategy.
  strategies=$([ $rows = 10000000 ] && echo "fp32,fp16,bf16,fp8,int8,int4" || echo "all")
  for dist in uniform zipf; do
    d=$([ $dist = uniform ] && echo "--uniform" || echo "--zipf 1.05")
    tag="${rows}x128-$dist"
    log "edo strategies on cuda: $tag ($strategies)"
    "$BUILD/bin/bench_kernels" --backend cuda --shapes $rows --reps 11 --batch $BATCH --strategies "$strategies" \
      $([ $dist = zipf ] && echo --zipf) --json "$RES/edo-bench-cuda-$tag.json" > "$RES/edo-bench-cuda-$tag.txt" 2>&1 || status=1
    for dt in float32 float16; do
      log "torch cuda anchor $tag $dt"
      "$PY" bench/kernels/torch_embedding_bag.py --device cuda --dtype $dt --json --rows $rows --dim 128 --batch $BATCH \
        --pooling 32 $d --reps 11 > "$RES/torch-cuda-$tag-$dt.json" || status=1
    done
  done
done

"$PY" - "$RES" <<'PYEOF'
import glob, json, os, sys
res = sys.argv[1]
print(f"{'shape':<22} {'strategy':<6} {'gather GB/s':>11} {'bag GB/s':>9} {'d2d GB/s':>9} {'bag/d2d':>8} {'vs torch bag':>12}")
for f in sorted(glob.glob(os.path.join(res, "edo-bench-cuda-*.json"))):
    tag = os.path.basename(f)[len("edo-bench-cuda-"):-5]
    try:
        j = json.load(open(f))
    except Exception as e:
        print(tag, "unreadable:", e); continue
    if isinstance(j, list): j = j[0]
    anchor = j["anchor"]["gbs"]
    for r in j["results"]:
        if r["strategy"] not in ("fp32", "fp16"): continue
        dt = "float32" if r["strategy"] == "fp32" else "float16"
        try:
            t = json.load(open(os.path.join(res, f"torch-cuda-{tag}-{dt}.json")))["embedding_bag_sum_rows_per_s"]
        except Exception:
            t = float("nan")
        # d2d counts read+write; a gather reads and writes each row, a bag mostly reads.
        g = r["gather_rows_per_s"] * r["bytes_per_row"] * 2 / 1e9
        b = r["bag_gbs"]
        print(f"{tag:<22} {r['strategy']:<6} {g:>11.0f} {b:>9.0f} {anchor:>9.0f} {b/anchor:>7.2f}x {r['bag_rows_per_s']/t:>11.2f}x")
print("targets: gather (read+write) and bag >= 0.85x d2d copy; bag >= 1.2x torch embedding_bag")
PYEOF
log "results in $RES"
exit $status
