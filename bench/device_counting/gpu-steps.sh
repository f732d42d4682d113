#!/usr/bin/env bash
# GPU steps of device-index counting (scripts/gpu-check.sh runs every bench/*/gpu-steps.sh;
# runnable alone on a GPU machine). Under `edo record`: a lookup-bound loop (10M x 128 fp32
# table, 1M indices per batch, one gather kernel per batch) timed in ABBA blocks of >= 1 s
# without and with edo_table_lookup(EDO_CUDA); prints the ratio (target <= 1.03) and the first
# call's set-up apart. Then the same with EDO_EXACT_ROWS=1000000 (count-min sketch on the
# device). Results go to $RESULTS (or $OUT, or bench/results/).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-$ROOT/build-gpu}
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/device-counting-build.log" edo edo_trace bench_device_counting ||
  { echo "device counting gpu-steps: no binaries to run"; exit 1; }
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib
status=0
for mode in exact sketch; do
  env=()
  [ $mode = sketch ] && env=(EDO_EXACT_ROWS=1000000)
  echo "=== device counting, $mode counters"
  env "${env[@]}" "$BUILD/bin/edo" record --force -o "$RES/device-counting-$mode.edodb" -- \
    "$BUILD/bin/bench_device_counting" --json "$RES/device-counting-$mode.json" 2>&1 |
    tee "$RES/device-counting-$mode.txt"
  rc=${PIPESTATUS[0]}
  [ $rc -eq 77 ] && { echo "SKIP: no CUDA device"; exit 0; }
  [ $rc -ne 0 ] && status=1
  "$BUILD/bin/edo" report "$RES/device-counting-$mode.edodb" > "$RES/device-counting-$mode-report.txt" 2>&1 || status=1
done
exit $status
