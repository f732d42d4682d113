#!/usr/bin/env bash
# `make demo`: run the bundled default job and show what edo sees.
# Usage: scripts/demo.sh BUILD_DIR DB_PATH
# When the tracer and the bundled PyTorch workload are built, the demo records
# examples/dlrm_like.py under `edo record`; otherwise it profiles the synthetic Zipf workload.
set -euo pipefail
build=${1:-build}
db=${2:-out/demo.edodb}
edo="$build/bin/edo"
[[ -x $edo ]] || { echo "demo: $edo not found; run 'make build' first" >&2; exit 1; }
mkdir -p "$(dirname "$db")"

torch_python=""
for py in "${EDO_PYTHON:-}" /usr/bin/python3 python3; do
  [[ -n $py ]] || continue
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then torch_python=$py; break; fi
done

if "$edo" --help 2>/dev/null | grep -q '^ *record' && [[ -f examples/dlrm_like.py && -n $torch_python ]]; then
  echo "demo: recording the bundled DLRM-like PyTorch job (examples/dlrm_like.py) with edo record"
  "$edo" record --force -o "$db" -- "$torch_python" examples/dlrm_like.py
else
  echo "demo: profiling the bundled synthetic workload (8 tables, Zipf 1.05) with edo synth"
  "$edo" synth --force -o "$db" --tables 8 --rows 2000000 --dim 64 --zipf 1.05 --lookups 4000000
fi
echo
"$edo" report "$db"
echo
echo "demo: the database is $db; try '$edo report --json $db' or '$edo --help'"
