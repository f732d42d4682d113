#!/usr/bin/env bash
# Every libFuzzer target, one after the other, for SECONDS each (`make fuzz`).
#
#   tests/fuzz/run-all.sh BUILD SECONDS
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$1 seconds=$2
shopt -s nullglob
fuzzers=("$build"/fuzz-clang/bin/fuzz_*)
if ((${#fuzzers[@]} == 0)); then
  echo "fuzz: no libFuzzer targets in $build/fuzz-clang/bin (clang++ with libFuzzer missing? see the configure output of $build)" >&2
  exit 1
fi
rm -f "$build/fuzz-results/summary.txt"
status=0
for f in "${fuzzers[@]}"; do
  name=${f##*/fuzz_}
  tests/fuzz/run-fuzzer.sh "$f" "$name" "$seconds" "tests/fuzz/corpus/$name" "$build/fuzz-results" || status=1
done
exit $status
