#!/usr/bin/env bash
# Builds the libFuzzer targets in the clang sub-build (called by the normal build; see
# EdoFuzz.cmake). A failure here must not stop the rest of the project from building and
# testing: it is logged, marked with BUILD-FAILED, and the fuzz_* tests fail naming the log.
#
#   build-fuzzers.sh BINARY_DIR
set -uo pipefail
dir=$1
log=$dir/fuzzers-build.log
if cmake --build "$dir" --target edo_fuzzers >"$log" 2>&1; then
  rm -f "$dir/BUILD-FAILED"
  exit 0
fi
first=$(grep -m1 -E "error|Error" "$log" || tail -n1 "$log")
echo "$first" >"$dir/BUILD-FAILED"
echo "edo: the clang build of the fuzz targets failed, the fuzz_* tests will fail: $first (whole log: $log)" >&2
exit 0
