#!/usr/bin/env bash
# GPU step of `make demo` (run by scripts/gpu-check.sh on a GPU machine; runnable alone):
# scripts/demo.sh on the GPU build. On a machine whose PyTorch has CUDA, the bundled job must
# run on the device (a device memory timeline in the recording), the tuner must measure on the
# GPU ("Measured on:" names it, not the CPU) and every step must succeed. The demo's output and
# files go to $RESULTS/demo (or $OUT, or bench/results/).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-$ROOT/build-gpu}
log() { echo "demo gpu-steps: $*" >&2; }
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/demo-gpu-build.log" edo edo_trace edo_python ||
  { log "no binaries to run"; exit 1; }
py=${EDO_TEST_PYTHON:-$(command -v python3)}
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIP demo gpu step: $py has no torch with a usable CUDA device"
  exit 0
fi
export EDO_PYTHON=$py
out="$RES/demo"
scripts/demo.sh "$BUILD" "$out" >"$RES/demo-gpu.txt" 2>&1
rc=$?
tail -n 25 "$RES/demo-gpu.txt"
status=0
((rc == 0)) || { log "FAIL: scripts/demo.sh exited $rc (see $RES/demo-gpu.txt)"; status=1; }
grep -q -- '--device cuda' "$RES/demo-gpu.txt" || { log "FAIL: the demo did not run the job on the GPU"; status=1; }
if grep -qE '^Measured on: CPU' "$RES/demo-gpu.txt" || ! grep -qE '^Measured on: .+' "$RES/demo-gpu.txt"; then
  log "FAIL: the tuner did not measure on the GPU: $(grep '^Measured on' "$RES/demo-gpu.txt")"; status=1
fi
if "$BUILD/bin/edo" report "$out/dlrm.edodb" 2>/dev/null | grep -q 'no device timeline'; then
  log "FAIL: the recording of the job on the GPU has no device memory timeline"; status=1
fi
((status == 0)) && log "ok: the demo ran the job on the GPU and the tuner measured there"
exit $status
