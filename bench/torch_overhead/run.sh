#!/usr/bin/env bash
# `make bench` entry: step time of the DLRM-like PyTorch job without and with edo (full
# counting), in one run. Prints the whole-process figures (process_overhead, cpu_overhead)
# beside their targets, then the in-process A/B diagnostics. Then percall.py: the time edo
# adds to one embedding forward of 768 ids, beside its 3 us target.
# Usage: bench/torch_overhead/run.sh BUILD_DIR [bench.py options]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
shift || true
driver=/usr/bin/python3
[[ -x $driver ]] || driver=$(command -v python3)
"$driver" "$here/bench.py" --build "$build" "$@"
rc=$?
# a missing prerequisite (no torch, no tracer yet) is not a benchmark failure
[[ $rc -eq 77 ]] && rc=0
# the cost edo adds to one embedding forward, beside its 3 us target (issue 32)
"$driver" "$here/percall.py" --build "$build"
prc=$?
[[ $prc -eq 77 ]] && prc=0
[[ $rc -ne 0 ]] && exit $rc
exit $prc
