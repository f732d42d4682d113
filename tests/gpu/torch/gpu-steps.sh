#!/usr/bin/env bash
# GPU steps of the PyTorch instrumentation (run by scripts/gpu-check.sh on a lent GPU machine,
# whose python3 has torch 2.x with CUDA): both bundled workloads with --device cuda under
# `edo record` — tables attributed, counts exact against the scripts' ground truth, CUPTI
# memory timeline present — and the step-time overhead. JSON results go to $RESULTS (or $OUT,
# or bench/results/). Usage: tests/gpu/torch/gpu-steps.sh [BUILD_DIR]
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:-${EDO_BUILD:-$root/build}}
out=${RESULTS:-${OUT:-$root/bench/results}}
mkdir -p "$out"
py=${EDO_TEST_PYTHON:-$(command -v python3)}
export EDO_TEST_PYTHON=$py
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIP torch gpu steps: $py has no torch with a usable CUDA device"
  exit 0
fi
"$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))'
status=0
for w in dlrm llm; do
  echo "=== torch $w on cuda"
  "$py" "$root/tests/integration/torch/torch_e2e.py" "$w" --build "$build" --source "$root" \
      --device cuda --json "$out/torch-gpu-$w.json" || status=1
done
echo "=== torch overhead on cuda"
"$py" "$root/bench/torch_overhead/bench.py" --build "$build" --device cuda --rounds 2 \
    --threads 0 --batch 8192 --json "$out/torch_overhead-gpu.json" || status=1
echo "=== torch overhead on cpu (same machine; last, so a time limit only cuts this)"
"$py" "$root/bench/torch_overhead/bench.py" --build "$build" --device cpu --rounds 1 \
    --steps 20 --json "$out/torch_overhead-cpu.json" || status=1
exit $status
