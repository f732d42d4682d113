#!/usr/bin/env bash
# GPU steps of the tracer (called by scripts/gpu-check.sh; runnable alone on a GPU machine):
#   1. build edo, libedo_trace.so, tracer_gpu_job and tracer_gpu_tests for sm_90 ($EDO_BUILD),
#      or use the bundle scripts/gpu-bundle.sh built there
#   2. run tracer_gpu_tests: a CUDA job under `edo record` -> the job unharmed (cudaGetLastError
#      after every launch), allocations attributed to tables, kernels tied to tables with GPU
#      time, device indices counted on the device (exact, and sketch mode: with the flushes
#      copying only the counter blocks the kernel's dirty bitmap names, edo_take_dirty), a job
#      that holds CUPTI itself (skips with a reason without a GPU)
#   3. overhead: the job's lookup loop with and without `edo record` (median of 3 each); the
#      recording names its GPU (the device profile name edo tune matches)
#   4. compute-sanitizer memcheck of the job with edo's counting kernel (and its dirty-bitmap
#      exchange) running in it
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
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/tracer-gpu-build.log" edo edo_trace tracer_gpu_job tracer_gpu_tests cupti_holder_job ||
  { log "no binaries to run"; exit 1; }

# tracer_gpu_job links the CUDA runtime shared; a bundle built elsewhere finds it here
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:/usr/local/cuda/lib:/usr/local/cuda/targets/x86_64-linux/lib
status=0
log "tracer_gpu_tests"
"$BUILD/bin/tracer_gpu_tests" --gtest_output="json:$RES/tracer-gpu-tests.json" 2>&1 | tee "$RES/tracer-gpu-tests.txt" | tail -30
grep -q "FAILED" "$RES/tracer-gpu-tests.txt" && status=1

log "overhead of edo record on the CUDA job (loop_ms, 3 runs each)"
plain=(); traced=()
for i in 1 2 3; do
  plain+=("$("$BUILD/bin/tracer_gpu_job" | awk '/loop_ms/ {print $2}')")
  traced+=("$("$BUILD/bin/edo" record --force -o "$RES/tracer-gpu-job.edodb" -- "$BUILD/bin/tracer_gpu_job" 2>/dev/null | awk '/loop_ms/ {print $2}')")
done
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(med "${plain[@]}"); t=$(med "${traced[@]}")
echo "gpu_job_loop_ms_plain $p" | tee "$RES/tracer-gpu-overhead.txt"
echo "gpu_job_loop_ms_traced $t" | tee -a "$RES/tracer-gpu-overhead.txt"
awk -v p="$p" -v t="$t" 'BEGIN { if (p > 0) printf "gpu_job_overhead_ratio %.4f\n", t / p }' | tee -a "$RES/tracer-gpu-overhead.txt"
"$BUILD/bin/edo" report "$RES/tracer-gpu-job.edodb" > "$RES/tracer-gpu-job-report.txt" 2>&1 || true
# The recording names the GPU (cuDeviceGetName at the counting set-up): the name `edo tune`
# matches the stored device profiles against (issue 19 point 5).
gpus=$("$BUILD/bin/edo" report --json "$RES/tracer-gpu-job.edodb" 2>/dev/null | python3 -c 'import json,sys; print(",".join(sorted({s.get("gpus","") for s in json.load(sys.stdin).get("sessions",[])} - {""})))' 2>/dev/null)
echo "gpu_job_recorded_gpus ${gpus:-none}" | tee -a "$RES/tracer-gpu-overhead.txt"
[ -n "$gpus" ] || { log "the recording does not name its GPU"; status=1; }

log "compute-sanitizer memcheck: the job with edo's counting kernel (EDO_OUTPUT mode)"
if command -v compute-sanitizer >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  # CUPTI capture off: the sanitizer is itself a CUDA tool; the counting kernel is what is checked.
  EDO_OUTPUT="$RES/tracer-gpu-sanitized.edo" EDO_CUDA_CAPTURE=0 timeout 120 "$cs" --tool memcheck --error-exitcode 9 \
    "$BUILD/bin/tracer_gpu_job" > "$RES/tracer-gpu-memcheck.txt" 2>&1
  rc=$?
  tail -5 "$RES/tracer-gpu-memcheck.txt"
  if [ $rc -eq 77 ]; then log "memcheck: no CUDA device (skipped)"
  elif [ $rc -ne 0 ]; then log "memcheck found errors (exit $rc), see tracer-gpu-memcheck.txt"; status=1; fi
else
  log "compute-sanitizer not found: memcheck skipped"
fi
exit $status
