#!/usr/bin/env bash
# The one script a GPU machine runs (see README "GPU"). It builds what needs only
# the CUDA toolkit for sm_90, runs the GPU tests, traces a real PyTorch GPU job and runs the
# GPU benchmarks, writing everything under $OUT (or bench/results/<date>-<card>/).
#
# A GPU machine without edo's Debian packages (only the driver, the CUDA toolkit and PyTorch)
# runs a bundle built elsewhere (scripts/gpu-bundle.sh, `make gpu-bundle`): copy the tree with
# build-gpu/bin, build-gpu/lib/libedo_trace.so and build-gpu/lib/python; the steps use those
# binaries when $EDO_BUILD has no CMakeCache.txt.
#
# Each part of edo adds its GPU steps as an executable `gpu-steps.sh` next to its GPU tests
# (tests/gpu/<area>/gpu-steps.sh or bench/<area>/gpu-steps.sh); this script runs them all,
# each with a time limit, and never stops at the first failure.
#
#   scripts/gpu-check.sh                      every step
#   scripts/gpu-check.sh bench/kernels ...    only the steps whose path contains an argument
#
# A step may state its own limit in a line "# edo-gpu-step-limit: SECONDS" (default
# $EDO_GPU_STEP_TIMEOUT, 180); the whole run stays within $EDO_GPU_CHECK_BUDGET seconds (default
# 540, so that a run fits a 10-minute session): a step gets at most what is left.
set -uo pipefail
cd "$(dirname "$0")/.."
export EDO_ROOT=$PWD
export EDO_BUILD=${EDO_BUILD:-$PWD/build-gpu}
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | tr ' ' '-' || true)
card=${card:-no-gpu}
export RESULTS=${OUT:-$PWD/bench/results/$(date +%Y-%m-%d)-$card}
mkdir -p "$RESULTS"
log="$RESULTS/gpu-check.log"
# Each step normally needs 30-150 s with a bundle (no building there); each is cut at its own
# limit (EDO_GPU_STEP_TIMEOUT by default), and the budget keeps the whole run inside one
# 10-minute call. Words given as arguments or in EDO_GPU_STEPS run only the steps whose path
# contains one of them (e.g. "tracer device_counting"), to split the steps over several runs.
step_limit=${EDO_GPU_STEP_TIMEOUT:-180}
budget=${EDO_GPU_CHECK_BUDGET:-540}
start=$SECONDS
only="$* ${EDO_GPU_STEPS:-}"

{
  echo "gpu-check: $(date -u +%FT%TZ) card=$card"
  nvidia-smi 2>&1 | head -n 15 || echo "nvidia-smi: not available"
  nvcc --version 2>&1 | tail -n 2 || echo "nvcc: not available"
} | tee "$log"

failed=0
steps=0
for step in tests/gpu/*/gpu-steps.sh bench/*/gpu-steps.sh; do
  [[ -x $step ]] || continue
  if [[ -n ${only// /} ]]; then
    wanted=0
    for w in $only; do [[ $step == *"$w"* ]] && wanted=1; done
    ((wanted)) || continue
  fi
  limit=$(sed -n 's/^# edo-gpu-step-limit: *\([0-9][0-9]*\).*/\1/p' "$step" | head -n1)
  limit=${limit:-$step_limit}
  left=$((budget - (SECONDS - start)))
  if ((left < 20)); then
    echo "SKIPPED (no time left in the ${budget} s budget): $step" | tee -a "$log"
    failed=$((failed + 1))
    continue
  fi
  ((limit > left)) && limit=$left
  steps=$((steps + 1))
  echo "=== $step (limit ${limit} s)" | tee -a "$log"
  if timeout "$limit" "$step" >>"$log" 2>&1; then
    echo "ok: $step" | tee -a "$log"
  else
    echo "FAILED ($?): $step" | tee -a "$log"
    failed=$((failed + 1))
  fi
done
echo "gpu-check: $steps step(s), $failed failed; results in $RESULTS" | tee -a "$log"
exit $((failed > 0))
