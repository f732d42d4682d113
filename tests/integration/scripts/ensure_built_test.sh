#!/usr/bin/env bash
# scripts/lib/ensure-built.sh, which every gpu-steps.sh uses on the GPU machine: a folder
# without CMakeCache.txt that holds every target is used as it is (the carried bundle); a
# folder that lacks one is configured and built; a folder with a cache is built there.
# `cmake` is a fake on PATH that records its calls (or fails, for case 4): nothing is built.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/fake"
cat >"$tmp/fake/cmake" <<'FAKE'
#!/usr/bin/env bash
echo "cmake $*" >>"$CMAKE_CALLS"
FAKE
chmod +x "$tmp/fake/cmake"
export PATH="$tmp/fake:$PATH" CMAKE_CALLS="$tmp/calls"
. "$root/scripts/lib/ensure-built.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. a bundle: every target present, no cache -> no cmake call
b="$tmp/bundle"
mkdir -p "$b/bin" "$b/lib/python/edo"
touch "$b/bin/edo" "$b/bin/tracer_gpu_tests" "$b/lib/libedo_trace.so"
: >"$CMAKE_CALLS"
edo_ensure_built "$b" "$tmp/log1" edo edo_trace tracer_gpu_tests edo_python 2>"$tmp/err1" || fail "bundle: non-zero"
[[ ! -s $CMAKE_CALLS ]] || fail "bundle: cmake was called: $(cat "$CMAKE_CALLS")"
grep -q "prebuilt bundle" "$tmp/err1" || fail "bundle: no 'prebuilt bundle' line"

# 2. a target missing -> configure (Release, CUDA on, sm_90) and build the targets
rm "$b/bin/tracer_gpu_tests"
: >"$CMAKE_CALLS"
EDO_ROOT=$root edo_ensure_built "$b" "$tmp/log2" edo tracer_gpu_tests 2>"$tmp/err2" || fail "missing: non-zero"
grep -q -- "-S $root -B $b .*-DCMAKE_CUDA_ARCHITECTURES=90 -DEDO_CUDA=ON" "$CMAKE_CALLS" || fail "missing: no configure: $(cat "$CMAKE_CALLS")"
grep -q -- "--build $b .*--target edo tracer_gpu_tests" "$CMAKE_CALLS" || fail "missing: no build: $(cat "$CMAKE_CALLS")"
grep -q "missing: tracer_gpu_tests" "$tmp/err2" || fail "missing: the missing target is not named"

# 3. a build folder with a cache -> build only
touch "$b/CMakeCache.txt"
: >"$CMAKE_CALLS"
edo_ensure_built "$b" "$tmp/log3" edo 2>/dev/null || fail "cache: non-zero"
[[ $(wc -l <"$CMAKE_CALLS") -eq 1 ]] && grep -q -- "--build $b" "$CMAKE_CALLS" || fail "cache: expected one build call: $(cat "$CMAKE_CALLS")"

# 4. a failing configure -> non-zero and one line naming the log and the bundle
cat >"$tmp/fake/cmake" <<'FAKE'
#!/usr/bin/env bash
exit 1
FAKE
rm "$b/CMakeCache.txt"
if edo_ensure_built "$b" "$tmp/log4" edo tracer_gpu_tests 2>"$tmp/err4"; then fail "configure failure: zero exit"; fi
grep -q "configure failed (see $tmp/log4).*gpu-bundle.sh" "$tmp/err4" || fail "configure failure: message: $(cat "$tmp/err4")"
echo "ensure-built: ok"
