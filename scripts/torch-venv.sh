#!/usr/bin/env bash
# Creates a virtual environment with PyPI's current CPU build of PyTorch, so that the PyTorch
# tests run against it as well as against Debian's python3-torch (1.13):
#   scripts/torch-venv.sh [DIR]            (default: build/torch-venv)
#   EDO_TEST_PYTHON=DIR/bin/python ctest --test-dir build -L torch
# The wheel comes from PyPI (with the CUDA libraries it depends on: a few GB); set
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu for PyTorch's smaller CPU-only wheels
# where that index is reachable. TORCH_SPEC picks another version ("torch==2.5.1").
set -euo pipefail

dir=${1:-build/torch-venv}
spec=${TORCH_SPEC:-torch}
index_args=()
if [[ -n "${TORCH_INDEX_URL:-}" ]]; then index_args=(--index-url "$TORCH_INDEX_URL"); fi
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "torch-venv: python3 cannot create a virtual environment with pip (install python3-venv: scripts/install-deps.sh)" >&2
  exit 2
fi
if [[ ! -x "$dir/bin/python" ]]; then
  python3 -m venv "$dir"
fi
"$dir/bin/python" -m pip install --quiet --upgrade pip
"$dir/bin/python" -m pip install --quiet "${index_args[@]}" "$spec" numpy
"$dir/bin/python" -c 'import torch; print("torch-venv: %s: torch %s" % (__import__("sys").executable, torch.__version__))'
