#!/usr/bin/env bash
# The tracer's concurrency under ThreadSanitizer (`make tsan`): builds libedo_trace.so, edo and
# the tests that drive the tracer from many threads and processes with -fsanitize=thread, runs
# them (traced jobs get the TSan runtime preloaded, as sanitizer builds always do), and keeps the
# output. Suppressions, each with its reason: scripts/tsan.supp. A data race or lock-order inversion anywhere (tracer, collector, job) fails the run.
#
#   scripts/tsan-check.sh [BUILD] [RESULTS]   # defaults: build-tsan, bench/results/<date>-tsan
#
# Too slow for every CI run (a full instrumented build); commit the RESULTS folder it writes.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-tsan}
results=${2:-bench/results/$(date +%Y-%m-%d)-tsan}
mkdir -p "$build" "$results"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
targets=(edo edo_trace edo_python tracer_job tracer_e2e_tests tracer_signal_tests threads_job concurrency_tests fault_job faults_tests)
tests='^(Ingest/Concurrency|TracerE2E|Faults)\.|^TracerSignals\.SigtermToRecordRightAfterARegistration'
# ThreadSanitizer does not support fork in a multi-threaded process (the forked child's new
# threads collide with the parent's in its registry: "dup thread with used id"; Python's
# multiprocessing pool forks too); the fork tests
# run in the normal and AddressSanitizer suites instead.
skip='(ForkWhileThreadsRun|EightProcessesAtOnce|ForkedWorkersAreSessions|ForkedWorkersWriteTheirOwnFiles|PythonPoolWorkers|SurviveForkWhileAnotherThread|StaleFilesOfAnEarlierRunAreNotMerged)'

echo "tsan: configure $build (EDO_SANITIZE=thread)"
cmake -S . -B "$build" "${generator[@]}" -DEDO_SANITIZE=thread -DEDO_GUI=OFF -DEDO_CUDA=OFF -DEDO_BUILD_BENCH=OFF \
  -DEDO_FUZZ_CLANG=OFF >"$results/configure.log" 2>&1 || { echo "tsan: configure failed, see $results/configure.log" >&2; exit 1; }
echo "tsan: build ${targets[*]}"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$results/build.log" 2>&1 ||
  { echo "tsan: build failed, see $results/build.log" >&2; exit 1; }

# die_after_fork=0: exec'ed and forked children of the tests' jobs (the tracer starts its thread
# again after fork). handle_segv=0: a job killed by SIGSEGV must die by it, as without TSan.
export TSAN_OPTIONS=${TSAN_OPTIONS:-die_after_fork=0:handle_segv=0:second_deadlock_stack=1:halt_on_error=0:exitcode=66:suppressions=$PWD/scripts/tsan.supp}
{
  echo "tsan-check: $(date -u +%FT%TZ) $(uname -srm), $(nproc) CPUs, $("${CXX:-c++}" --version | head -n1)"
  echo "TSAN_OPTIONS=$TSAN_OPTIONS"
  echo "commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
} >"$results/summary.txt"
echo "not run under TSan (fork in a multi-threaded process is not supported): $skip" >>"$results/summary.txt"
ctest --test-dir "$build" -R "$tests" -E "$skip" --output-on-failure -j 2 --timeout 900 >"$results/ctest.log" 2>&1
status=$?
# Every TSan report the runs printed (jobs' stderr is captured in the test output).
grep -h -A40 "WARNING: ThreadSanitizer" "$results/ctest.log" >"$results/reports.txt" || true
races=$(grep -c "WARNING: ThreadSanitizer" "$results/ctest.log")
grep -E "tests passed|tests failed|\(Failed\)|\(Skipped\)" "$results/ctest.log" | tee -a "$results/summary.txt"
echo "ThreadSanitizer reports: $races" | tee -a "$results/summary.txt"
[[ $races -eq 0 ]] && rm -f "$results/reports.txt"
echo "tsan: results in $results"
exit $((status != 0 || races != 0))
