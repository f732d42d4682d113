#!/usr/bin/env bash
# Per-launch cost on the job's thread with and without edo (issue 21.4), on the fake CUDA stack
# (tests/integration/fake_gpu: a launch there costs what the tracer's callbacks cost plus a
# function call, so edo's share is what it adds). fake_gpu_job launches an empty kernel with a
# PyTorch-style templated name through __cudaLaunchKernel (<<<>>>) and cudaLaunchKernel; the
# median of 3 runs each, plain and under `edo record`, side by side with the added nanoseconds
# and the ratio; wall-clock (ns_per_launch_*) and the job thread's CPU time (cpu_ns_per_launch_*,
# which leaves out waiting for a core on a loaded machine). The real stack's figure:
# scripts/gpu-check.sh stack_facts (launch_us).
#   bench/launch_cost/run.sh BUILD_DIR [LAUNCHES]
set -uo pipefail
build=${1:-build}
n=${2:-200000}
job=$build/bin/fake_gpu_job
edo=$build/bin/edo
if [[ ! -x $job || ! -x $edo ]]; then
  echo "launch_cost: $job or $edo not built (needs the CUDA headers for the fake stack); skipped"
  exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-launch-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A plain traced
for i in 1 2 3; do
  while read -r k v; do plain[$k]+="$v "; done < <("$job" launches "$n" | grep 'ns_per_launch')
  while read -r k v; do traced[$k]+="$v "; done < <("$edo" record --force -o "$tmp/run$i.edodb" -- "$job" launches "$n" 2>/dev/null |
                                                     grep 'ns_per_launch')
done
status=0
for k in ns_per_launch_chevron ns_per_launch_runtime cpu_ns_per_launch_chevron cpu_ns_per_launch_runtime; do
  [[ -n ${plain[$k]:-} && -n ${traced[$k]:-} ]] || { echo "launch_cost: no figures for $k"; status=1; continue; }
  p=$(med ${plain[$k]}); t=$(med ${traced[$k]})
  awk -v k="$k" -v p="$p" -v t="$t" 'BEGIN { printf "%s: without edo %.1f ns, with edo %.1f ns, added %.1f ns (ratio %.2f)\n", k, p, t, t - p, (p > 0 ? t / p : 0) }'
done
exit $status
