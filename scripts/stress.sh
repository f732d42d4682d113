#!/usr/bin/env bash
# `make stress`: the test suite several times in a row with more parallel tests than cores,
# optionally beside busy loops that take CPU from it, then which tests failed in which run.
# A test that waits for time instead of for the event it needs fails here first.
#
#   scripts/stress.sh [BUILD]          # default build/
#
# Settings (environment):
#   STRESS_RUNS=3       how many times the suite runs
#   STRESS_JOBS=N       ctest -j N (default: cores + 2, at least 3)
#   STRESS_HOG=0        busy-loop processes beside the suite (0: none; e.g. the core count)
#   STRESS_REGEX=       only the tests whose name matches (ctest -R)
#   STRESS_TIMEOUT=600  per-test timeout in seconds (ctest --timeout)
#
# Each run's ctest output goes to BUILD/stress/run-N.log. Exit status: 0 when every run passed,
# 1 when a test failed in some run, 2 for bad settings.
set -uo pipefail
build=${1:-build}
runs=${STRESS_RUNS:-3}
cores=$(nproc 2>/dev/null || echo 2)
jobs=${STRESS_JOBS:-$((cores + 2 > 3 ? cores + 2 : 3))}
hogs=${STRESS_HOG:-0}
regex=${STRESS_REGEX:-}
timeout=${STRESS_TIMEOUT:-600}

for pair in "STRESS_RUNS:$runs" "STRESS_JOBS:$jobs" "STRESS_HOG:$hogs" "STRESS_TIMEOUT:$timeout"; do
  value=${pair#*:}
  [[ $value =~ ^[0-9]+$ ]] || { echo "stress: ${pair%%:*}='$value' is not a whole number" >&2; exit 2; }
done
((runs >= 1)) || { echo "stress: STRESS_RUNS must be at least 1" >&2; exit 2; }
((jobs >= 1)) || { echo "stress: STRESS_JOBS must be at least 1" >&2; exit 2; }
[[ -f $build/CTestTestfile.cmake ]] || { echo "stress: $build has no tests (build it first: make build)" >&2; exit 2; }

out="$build/stress"
rm -rf "$out"
mkdir -p "$out"

# The busy loops: started here, ended here by their own process ids.
hog_pids=()
stop_hogs() {
  local pid
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${hog_pids[@]}"; do wait "$pid" 2>/dev/null; done
  hog_pids=()
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for ((h = 0; h < hogs; h++)); do
  (while :; do :; done) &
  hog_pids+=($!)
done

filter=()
[[ -n $regex ]] && filter=(-R "$regex")
echo "stress: $runs run(s) of ctest -j $jobs on $cores core(s), $hogs busy loop(s) beside it${regex:+, tests matching '$regex'}"
echo "stress: load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
failed_any=0
for ((r = 1; r <= runs; r++)); do
  log="$out/run-$r.log"
  start=$(date +%s)
  ctest --test-dir "$build" -j "$jobs" --timeout "$timeout" --output-on-failure "${filter[@]}" >"$log" 2>&1
  status=$?
  # ctest lists the failed tests of its last run as "N:name", one a line.
  failed_file="$build/Testing/Temporary/LastTestsFailed.log"
  if ((status != 0)) && [[ -s $failed_file ]]; then
    cut -d: -f2- "$failed_file" >"$out/failed-$r.txt"
  elif ((status != 0)); then
    echo "(ctest exited $status without a list of failed tests: see $log)" >"$out/failed-$r.txt"
  else
    : >"$out/failed-$r.txt"
  fi
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$log" | tail -1)
  echo "stress: run $r/$runs: ${summary:-ctest exited $status} ($(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null))"
  ((status != 0)) && failed_any=1
done
stop_hogs

echo
if ((failed_any == 0)); then
  echo "stress: every test passed in all $runs run(s)"
  exit 0
fi
echo "stress: failures (test: runs it failed in; output in $out/run-N.log)"
for ((r = 1; r <= runs; r++)); do sed "s/\$/\t$r/" "$out/failed-$r.txt"; done |
  awk -F'\t' 'NF == 2 && $1 != "" { runs[$1] = runs[$1] (runs[$1] == "" ? "" : ", ") $2; n[$1]++ }
              END { for (t in runs) printf "  %s: run %s (%d of '"$runs"')\n", t, runs[t], n[t] }' | sort
exit 1
