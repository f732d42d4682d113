#!/usr/bin/env bash
# Facts of the real CUDA/PyTorch stack behind issue 21, one line each ("launch_path ..." from
# launch_paths_probe, "FACT ..." from stack_facts.py): driver callbacks inside <<<>>> /
# cudaLaunchKernel / cudaLaunchKernelExC; an embedding in torch.cuda.graph with and without
# edo; 30 GLOBAL-mode captures while edo flushes every 10 ms; CUDA_VISIBLE_DEVICES set after
# `import torch`; microseconds per launch with and without edo; torch.compile
# (mode="reduce-overhead", expandable segments) with its embedding kernels tied to the table;
# EDO_MAX_DEVICE_MB=16 with a table too big for it (edo's own device memory as reported, the
# table counted on the host); 8 workers forked while a thread launches embeddings under edo
# (none hangs).
# edo-gpu-step-limit: 240
set -uo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${EDO_BUILD:-$root/build-gpu}
out=${RESULTS:-${OUT:-$root/bench/results}}
mkdir -p "$out"
py=${EDO_TEST_PYTHON:-$(command -v python3)}
. "$root/scripts/lib/ensure-built.sh"
EDO_ROOT=$root edo_ensure_built "$build" "$out/stack-facts-build.log" edo edo_trace edo_python launch_paths_probe ||
  { echo "stack facts gpu-steps: no binaries to run"; exit 1; }
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
status=0
res="$out/stack-facts.txt"
echo "stack facts: $(date -u +%FT%TZ)" | tee "$res"
if [ -x "$build/bin/launch_paths_probe" ]; then
  "$build/bin/launch_paths_probe" 2>&1 | tee -a "$res"
  rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && status=1
else
  echo "launch_path: launch_paths_probe not built" | tee -a "$res"
  status=1
fi
"$py" "$root/tests/gpu/stack_facts/stack_facts.py" --build "$build" --python "$py" 2>&1 | tee -a "$res"
rc=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && status=1
exit $status
