#!/usr/bin/env bash
# GPU steps of the tracer (called by scripts/gpu-check.sh; runnable alone on a GPU machine):
#   1. build edo, libedo_trace.so, tracer_gpu_job and tracer_gpu_tests for sm_90 ($EDO_BUILD),
#      or use the bundle scripts/gpu-bundle.sh built there
#   2. run tracer_gpu_tests: a CUDA job under `edo record` -> allocations attributed to tables,
#      kernel names and times, exact device-index counts (skips with a reason without a GPU)
#   3. overhead: the job's lookup loop with and without `edo record` (median of 5 each)
#   4. the CPU overhead benchmark (bench_trace_overhead) on this machine's cores
# Results go to $RESULTS (or $OUT, or bench/results/).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-$ROOT/build-gpu}
ARCH=${ARCH:-90}
log() { echo "tracer gpu-steps: $*" >&2; }

log "build (sm_$ARCH) in $BUILD"
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/tracer-gpu-build.log" edo edo_trace tracer_gpu_job tracer_gpu_tests bench_trace_overhead ||
  { log "no binaries to run"; exit 1; }

# tracer_gpu_job links the CUDA runtime shared; a bundle built elsewhere finds it here
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib
status=0
log "tracer_gpu_tests"
"$BUILD/bin/tracer_gpu_tests" --gtest_output="json:$RES/tracer-gpu-tests.json" 2>&1 | tee "$RES/tracer-gpu-tests.txt" | tail -30
grep -q "FAILED" "$RES/tracer-gpu-tests.txt" && status=1

log "overhead of edo record on the CUDA job (loop_ms, 5 runs each)"
plain=(); traced=()
for i in 1 2 3 4 5; do
  plain+=("$("$BUILD/bin/tracer_gpu_job" | awk '/loop_ms/ {print $2}')")
  traced+=("$("$BUILD/bin/edo" record --force -o "$RES/tracer-gpu-job.edodb" -- "$BUILD/bin/tracer_gpu_job" 2>/dev/null | awk '/loop_ms/ {print $2}')")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(med "${plain[@]}"); t=$(med "${traced[@]}")
echo "gpu_job_loop_ms_plain $p" | tee "$RES/tracer-gpu-overhead.txt"
echo "gpu_job_loop_ms_traced $t" | tee -a "$RES/tracer-gpu-overhead.txt"
awk -v p="$p" -v t="$t" 'BEGIN { if (p > 0) printf "gpu_job_overhead_ratio %.4f\n", t / p }' | tee -a "$RES/tracer-gpu-overhead.txt"
"$BUILD/bin/edo" report "$RES/tracer-gpu-job.edodb" > "$RES/tracer-gpu-job-report.txt" 2>&1 || true

log "CPU overhead benchmark"
"$BUILD/bin/bench_trace_overhead" --reps 5 2>&1 | tee "$RES/tracer-cpu-overhead.txt" | grep -E "ratio|ms" || status=1
exit $status
