#!/usr/bin/env bash
# The GPU bundle (scripts/gpu-bundle.sh, EDO_STATIC_DEPS=ON) must link everything but glibc
# statically; a full bundle build takes many minutes, so this checks the link lines that the
# configure writes: every library on the line of each bundled executable is a static archive or
# a glibc part (-lm -ldl -lrt -lpthread; CUDA's own static -lcudart_static -lcudadevrt), with
# -static-libstdc++ -static-libgcc, and no -fopenmp (that would bring libgomp.so).
# Usage: static_link_line_test.sh SOURCE_DIR GENERATOR
set -uo pipefail
src=$1
generator=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-static.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! cmake -S "$src" -B "$tmp/build" -G "$generator" -DEDO_STATIC_DEPS=ON -DEDO_GUI=OFF -DEDO_CUDA=OFF \
     -DEDO_BUILD_TESTS=OFF -DEDO_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release >"$tmp/log" 2>&1; then
  echo "FAIL: the EDO_STATIC_DEPS=ON configure failed:"
  cat "$tmp/log"
  exit 1
fi

link_line() { # target name -> its link command on one line
  if [[ $generator == Ninja ]]; then
    (cd "$tmp/build" && ninja -t commands "bin/$1" | tail -n1)
  else
    f=$(find "$tmp/build" -path "*/CMakeFiles/$1.dir/link.txt" | head -n1)
    [[ -n $f ]] && cat "$f"
  fi
}

status=0
for target in edo bench_tune bench_kernels; do
  line=$(link_line "$target")
  if [[ -z $line ]]; then
    echo "FAIL: no link line for $target"
    status=1
    continue
  fi
  bad=()
  for flag in -static-libstdc++ -static-libgcc; do
    [[ " $line " == *" $flag "* ]] || bad+=("missing $flag")
  done
  for tok in $line; do
    case $tok in
      -lm|-ldl|-lrt|-lpthread|-lc|-lcudart_static|-lcudadevrt) ;;
      -l*) bad+=("$tok (a shared library)") ;;
      -fopenmp*) bad+=("$tok (links libgomp.so)") ;;
      *.so|*.so.[0-9]*) bad+=("$tok (a shared library)") ;;
    esac
  done
  if ((${#bad[@]})); then
    echo "FAIL: $target in the GPU bundle would need more than glibc: ${bad[*]}"
    status=1
  else
    echo "ok: $target links everything but glibc statically"
  fi
done
exit $status
