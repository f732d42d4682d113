#!/usr/bin/env bash
# GPU steps of the tuner: `edo tune --backend cuda --time-limit 120` on the 26-table Criteo-like
# recording (bench_tune), its plan and the line with the wall time vs the limit and the number
# of candidates measured; then bench_tune --scale on 1000 tables; under $RESULTS (or $OUT, else
# bench/results/). scripts/gpu-check.sh runs it; it also runs alone.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-${BUILD:-$ROOT/build-gpu}}
log() { echo "gpu-steps(tune): $*" >&2; }
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/tune-gpu-build.log" edo bench_tune || { log "no binaries to run"; exit 1; }
log "edo tune on cuda, 26 Criteo-like tables, --time-limit 120"
"$BUILD/bin/bench_tune" --backend cuda --time-limit 120 --out "$RES/tune-cuda" 2>&1 | tee "$RES/tune-cuda.txt"
status=${PIPESTATUS[0]}
cp "$RES/tune-cuda/plan.json" "$RES/tune-cuda-plan.json" 2>/dev/null
rm -f "$RES/tune-cuda/criteo-like.edodb"
# Representatives on the GPU (issue 19 point 8): 1000 tables of 1000 to 1M rows within the default
# limit, and the median error of predicted times against a sample measured for real (a GPU's
# per-lookup time depends more on the batch than a CPU's: this checks the classes' buckets there).
# About 6 minutes; EDO_TUNE_SCALE=0 skips it.
if [ "${EDO_TUNE_SCALE:-1}" != 0 ]; then
  log "edo tune on cuda, 1000 synth tables, the default time limit, then the prediction error"
  "$BUILD/bin/bench_tune" --scale --counts 1000 --backend cuda --out "$RES/tune-scale-cuda" 2>&1 | tee "$RES/tune-scale-cuda.txt"
  scale_status=${PIPESTATUS[0]}
  rm -f "$RES"/tune-scale-cuda/*.edodb
  [ "$scale_status" = 0 ] || status=$scale_status
fi
exit "$status"
