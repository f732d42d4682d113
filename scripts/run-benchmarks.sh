#!/usr/bin/env bash
# `make bench`: run every benchmark under bench/; each prints the project's figure next to its
# anchor from the same run, as a ratio. Usage: scripts/run-benchmarks.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
status=0
ran=0
for exe in "$build"/bin/bench_*; do
  [[ -x $exe ]] || continue
  echo "=== $(basename "$exe")"
  "$exe" || status=1
  ran=$((ran + 1))
done
for script in bench/*/run.sh; do
  [[ -x $script ]] || continue
  echo "=== $script"
  "$script" "$build" || status=1
  ran=$((ran + 1))
done
echo "bench: ran $ran benchmark(s)"
exit $status
