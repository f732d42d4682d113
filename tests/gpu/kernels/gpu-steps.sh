#!/usr/bin/env bash
# edo-gpu-step-limit: 150
# GPU steps of the CUDA kernels' correctness (run by scripts/gpu-check.sh, or alone on a GPU
# machine; results under $RESULTS, $OUT, else bench/results/):
#   1. the binaries: the bundle scripts/gpu-bundle.sh built, or a build for sm_90 ($EDO_BUILD)
#   2. edo_kernels_gpu_tests: every CUDA kernel against the fp64 sum of the decoded rows within
#      the float32 bound (tests/unit/kernels/bag_reference.h) and against the CPU backend, fp8's
#      every code, the LRU offload policy batch after batch, graph capture of lookups (no
#      allocation, no host synchronisation), the Backend timing a tuner uses, the training
#      step (the CUDA backend declines it until it has optimizer kernels; then its update must
#      equal the CPU backend's)                                                 (~30 s)
#   3. compute-sanitizer: memcheck on the tests that run every kernel family on small tables
#      (out-of-range indices, LRU offload, graph capture, fp8), racecheck on the one that runs
#      the shared-memory kernels (PQ's codebook, multi-hash's buckets)          (<= 100 s)
# Exit status: 0 when the tests pass and the sanitizer reports nothing.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-${BUILD:-$ROOT/build-gpu}}
log() { echo "kernels gpu-steps (tests): $*" >&2; }

. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/kernels-gpu-build.log" edo_kernels_gpu_tests || { log "no binaries to run"; exit 1; }

status=0
log "edo_kernels_gpu_tests"
"$BUILD/bin/edo_kernels_gpu_tests" --gtest_output="json:$RES/kernels-gpu-tests.json" >"$RES/kernels-gpu-tests.txt" 2>&1 || status=1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which is|actual" "$RES/kernels-gpu-tests.txt" | head -40
tail -3 "$RES/kernels-gpu-tests.txt"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -n1)
if [[ -z $sanitizer ]]; then
  log "compute-sanitizer not found: memcheck skipped"
else
  declare -A filter=(
    [memcheck]='CudaKernels.OutOfRangeIndexIsReported:CudaKernels.LruOffloadFollowsThePolicyBatchAfterBatch:CudaKernels.Fp8EveryCodeDecodesExactly:CudaKernels.LookupsNeitherAllocateNorSynchronise'
    [racecheck]='CudaKernels.LookupsNeitherAllocateNorSynchronise')
  declare -A limit=([memcheck]=60 [racecheck]=40)
  for tool in memcheck racecheck; do
    log "compute-sanitizer --tool $tool"
    timeout "${limit[$tool]}" "$sanitizer" --tool $tool --error-exitcode 3 "$BUILD/bin/edo_kernels_gpu_tests" --gtest_filter="${filter[$tool]}" \
      >"$RES/kernels-gpu-sanitizer-$tool.txt" 2>&1
    rc=$?
    tail -4 "$RES/kernels-gpu-sanitizer-$tool.txt"
    if [[ $rc -ne 0 ]]; then
      log "$tool: exit $rc (3: errors reported, 124: out of time) - see kernels-gpu-sanitizer-$tool.txt"
      status=1
    fi
  done
fi
exit $status
