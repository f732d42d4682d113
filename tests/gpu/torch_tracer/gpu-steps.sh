#!/usr/bin/env bash
# GPU steps of the tracer with PyTorch on CUDA (run by scripts/gpu-check.sh on a machine whose
# python3 has torch with CUDA): torch_gpu_checks.py under `edo record` (the job unharmed and
# bit-identical, memory timeline and peak, kernels tied to the embedding, torch.profiler
# handed CUPTI). Results go to $RESULTS (or $OUT, or bench/results/).
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${EDO_BUILD:-$root/build-gpu}
out=${RESULTS:-${OUT:-$root/bench/results}}
mkdir -p "$out"
py=${EDO_TEST_PYTHON:-$(command -v python3)}
. "$root/scripts/lib/ensure-built.sh"
EDO_ROOT=$root edo_ensure_built "$build" "$out/torch-tracer-build.log" edo edo_trace edo_python ||
  { echo "torch tracer gpu-steps: no binaries to run"; exit 1; }
"$py" "$root/tests/gpu/torch_tracer/torch_gpu_checks.py" --build "$build" --python "$py" \
    --json "$out/torch-tracer-gpu.json"
rc=$?
[ $rc -eq 77 ] && exit 0
exit $rc
