#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed time and reports what it did in one line:
#
#   run-fuzzer.sh FUZZER NAME SECONDS CORPUS_DIR RESULTS_DIR
#
#   fuzz wire: 81234 executions in 10 s (seed 42), corpus 12 -> 49, 0 crashes, 0 leaks, 0 timeouts, 0 out-of-memory
#
# The committed corpus (CORPUS_DIR) is read, never written: new inputs go to a scratch folder.
# Any single allocation above FUZZ_MALLOC_LIMIT_MB (default 512) or a resident size above
# FUZZ_RSS_LIMIT_MB (2048) counts as out-of-memory: hostile input must not make edo allocate
# wildly. An input that runs longer than FUZZ_TIMEOUT_S (10) counts as a timeout (a hang).
# The line is also appended to RESULTS_DIR/summary.txt; findings are copied to RESULTS_DIR/NAME/
# with the command that reproduces them. Exit status: 0 nothing found, 1 a finding, 2 usage.
set -uo pipefail
if [[ $# -ne 5 ]]; then
  echo "usage: run-fuzzer.sh FUZZER NAME SECONDS CORPUS_DIR RESULTS_DIR" >&2
  exit 2
fi
fuzzer=$1 name=$2 seconds=$3 corpus=$4 results=$5
bindir=$(dirname "$(dirname "$fuzzer")")
if [[ -f $bindir/BUILD-FAILED ]]; then
  echo "fuzz $name: the clang build of the fuzz targets failed: $(cat "$bindir/BUILD-FAILED") (log: $bindir/fuzzers-build.log)" >&2
  exit 1
fi
if [[ ! -x $fuzzer ]]; then
  echo "fuzz $name: $fuzzer was not built (build the 'all' target; see tests/fuzz/README.md)" >&2
  exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/edo-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/new" "$work/findings" "$results"
# The fuzzer runs inside the scratch folder (anything a target writes to its current folder
# goes there and is removed, never into the source tree), so every path becomes absolute.
work=$(realpath "$work") fuzzer=$(realpath "$fuzzer") corpus=$(realpath "$corpus") results=$(realpath "$results")
dict=()
[[ -f $corpus.dict ]] && dict=(-dict="$corpus.dict")

# Leaks are findings; the job-like parts of edo never run here, so nothing is suppressed.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
started=$SECONDS
(cd "$work" && exec "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 -timeout="${FUZZ_TIMEOUT_S:-10}" \
  -rss_limit_mb="${FUZZ_RSS_LIMIT_MB:-2048}" -malloc_limit_mb="${FUZZ_MALLOC_LIMIT_MB:-512}" \
  -artifact_prefix="$work/findings/" "${dict[@]}" "$work/new" "$corpus") >"$work/log" 2>&1
rc=$?
elapsed=$((SECONDS - started))

# Executions: the final statistics, or the last status line ("#12345 ...") when it stopped early.
execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$work/log" | tail -n1)
[[ -z $execs ]] && execs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$work/log" | tail -n1)
seed=$(sed -n 's/.*INFO: Seed: \([0-9]*\).*/\1/p' "$work/log" | head -n1)
count() { find "$work/findings" -maxdepth 1 -name "$1-*" | wc -l; }
crashes=$(count crash) leaks=$(count leak) timeouts=$(count timeout) ooms=$(count oom)
seeds=$(find "$corpus" -type f | wc -l)
grown=$((seeds + $(find "$work/new" -type f | wc -l)))
line="fuzz $name: ${execs:-0} executions in $elapsed s (seed ${seed:-?}), corpus $seeds -> $grown, $crashes crashes, $leaks leaks, $timeouts timeouts, $ooms out-of-memory"
echo "$line"
echo "$line" >>"$results/summary.txt"

findings=$((crashes + leaks + timeouts + ooms))
if ((rc != 0 || findings > 0)); then
  mkdir -p "$results/$name"
  cp "$work"/findings/* "$results/$name/" 2>/dev/null
  cp "$work/log" "$results/$name/fuzzer.log"
  echo "--- last lines of the fuzzer's output (whole log: $results/$name/fuzzer.log) ---"
  tail -n 40 "$work/log"
  for f in "$results/$name"/{crash,leak,timeout,oom}-*; do
    [[ -e $f ]] || continue
    echo "reproduce: $fuzzer $f"
  done
  echo "once fixed, keep the input as tests/fuzz/corpus/$name/regress-<what-it-broke> (see tests/fuzz/README.md)"
  exit 1
fi
exit 0
