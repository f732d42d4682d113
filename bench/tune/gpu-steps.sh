#!/usr/bin/env bash
# GPU step of the tuner: `edo tune --backend cuda --time-limit 120` on the 26-table Criteo-like
# recording (bench_tune), its plan and the line with the wall time vs the limit and the number
# of candidates measured, under $RESULTS (or $OUT, else bench/results/). scripts/gpu-check.sh
# runs it; it also runs alone.
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
exit "$status"
