#!/usr/bin/env bash
# `make bench` entry: edo's CPU bag kernels beside PyTorch's embedding_bag on the same shapes
# (the torch anchor of the strategy-kernels issue). bench_kernels (triad anchor) runs separately.
# Usage: bench/kernels/run.sh BUILD_DIR [compare_torch.py options]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
shift || true
if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  echo "bench/kernels: no torch for /usr/bin/python3 (scripts/install-deps.sh installs python3-torch); torch anchor skipped"
  exit 0
fi
exec /usr/bin/python3 "$here/compare_torch.py" --edo "$build/bin/edo" "$@"
