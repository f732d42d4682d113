#!/usr/bin/env bash
# Creates a virtual environment with PyPI's torch, torchrec and fbgemm-gpu-cpu, so that the
# TorchRec export is checked against TorchRec's real sharding planner (torch_torchrec_real):
#   scripts/torchrec-venv.sh [DIR]          (default: build/torchrec-venv)
#   EDO_TORCHREC_PYTHON=DIR/bin/python ctest --test-dir build -R torch_torchrec_real
# The three must be built for each other: fbgemm-gpu-cpu's compiled operators link against one
# torch release (with another, importing fbgemm_gpu fails with "undefined symbol"). The pins
# below were checked together on 2026-12-01; TORCHREC_PINS replaces them ("torch==X torchrec==Y
# fbgemm-gpu-cpu==Z"). torchrec depends on fbgemm-gpu (the CUDA build, which needs libnvidia-ml);
# it is replaced by fbgemm-gpu-cpu, which provides the same fbgemm_gpu module. A few GB: PyPI's
# torch wheel brings the CUDA libraries it depends on.
set -euo pipefail

dir=${1:-build/torchrec-venv}
read -r -a pins <<< "${TORCHREC_PINS:-torch==2.14.1 torchrec==1.9.2 fbgemm-gpu-cpu==1.9.0}"
torch_pin=${pins[0]}
torchrec_pin=${pins[1]}
fbgemm_pin=${pins[2]}
if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "torchrec-venv: python3 cannot create a virtual environment with pip (install python3-venv: scripts/install-deps.sh)" >&2
  exit 2
fi
if [[ ! -x "$dir/bin/python" ]]; then
  python3 -m venv "$dir"
fi
py="$dir/bin/python"
"$py" -m pip install --quiet --upgrade pip
"$py" -m pip install --quiet "$torch_pin" "$torchrec_pin" numpy
"$py" -m pip uninstall --quiet --yes fbgemm-gpu fbgemm-gpu-cpu >/dev/null 2>&1 || true
"$py" -m pip install --quiet --no-deps "$fbgemm_pin"
"$py" -c 'import torch, torchrec, fbgemm_gpu
from torchrec.distributed.planner import EmbeddingShardingPlanner
from importlib.metadata import version
print("torchrec-venv: %s: torch %s, torchrec %s, fbgemm-gpu-cpu %s" % (__import__("sys").executable, torch.__version__, version("torchrec"), version("fbgemm-gpu-cpu")))'
