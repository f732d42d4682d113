#!/usr/bin/env bash
# `make screenshots`: regenerate the dashboard screenshots under docs/screenshots/ with
# edo-dashboard's headless --screenshot mode.
# Usage: scripts/screenshots.sh BUILD_DIR [OUT_DIR]
#  * examples/dlrm_like.py recorded under `edo record` (PyTorch on the CPU: no CUDA timeline),
#    twice (the second run with wider tables and more steps) for the diff;
#  * the first one tuned by `edo tune --backend cpu` for the Tuner view;
#  * a fake GPU recording (edo-fake-recording: the shape `edo record` writes for a CUDA job,
#    made without a GPU) for the device memory timeline and the kernels view.
set -euo pipefail
build=${1:-build}
out=${2:-docs/screenshots}
cmake --build "$build" --target edo edo-dashboard edo-fake-recording edo_trace edo_python >/dev/null
edo="$build/bin/edo"
dash="$build/bin/edo-dashboard"

torch_python=""
for py in "${EDO_PYTHON:-}" /usr/bin/python3 python3; do
  [[ -n $py ]] || continue
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then torch_python=$py; break; fi
done
[[ -n $torch_python ]] || { echo "screenshots: no python3 with torch (set EDO_PYTHON)" >&2; exit 1; }

# A fixed folder rather than a random one: the dashboard shows each recording's path, and the
# screenshots should not carry a random name. Removed before and after.
work="${TMPDIR:-/tmp}/edo-screenshots"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# One drift window every 2 steps, so that the detail view has a drift curve to show.
record() {  # out args...: the job's and edo's output only when something fails
  local out=$1
  shift
  EDO_WINDOW_STEPS=2 OMP_NUM_THREADS=2 "$edo" record -o "$out" -- "$torch_python" examples/dlrm_like.py "$@" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; echo "screenshots: recording examples/dlrm_like.py failed" >&2; exit 1; }
}
record "$work/dlrm-like.edodb" --steps 40
record "$work/dlrm-like-dim32.edodb" --steps 40 --dim 32
"$build/bin/edo-fake-recording" -o "$work/fake-gpu.edodb" --tables 10 --rows 2000000 --lookups 400000
# The tuner on this machine's CPU (half a minute): a plan for the DLRM-like job under 3 MiB
# with at most 1 % error per table.
cp "$work/dlrm-like.edodb" "$work/dlrm-like-tuned.edodb"
"$edo" tune "$work/dlrm-like-tuned.edodb" --budget 3MiB --max-error 0.01 --backend cpu >"$work/log" 2>&1 ||
  { cat "$work/log" >&2; echo "screenshots: edo tune failed" >&2; exit 1; }

shot() {  # file view name
  "$dash" "$1" --screenshot "$out/$3.png" --view "$2" --size 1280x800
  echo "screenshots: $out/$3.png"
}
shot "$work/fake-gpu.edodb" overview overview-gpu
shot "$work/dlrm-like.edodb" overview overview-cpu
shot "$work/dlrm-like.edodb" tables tables
shot "$work/dlrm-like.edodb" table:sparse.item table-detail
shot "$work/fake-gpu.edodb" kernels kernels
shot "$work/dlrm-like-tuned.edodb" tuner tuner
# The wider run open ("after"), compared with the first ("before").
shot "$work/dlrm-like-dim32.edodb" "diff:$work/dlrm-like.edodb" diff
