#!/bin/sh
# Usage: wrong_way_link_test.sh SOURCE_DIR GENERATOR
src=$1
generator=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if cmake -S "$src" -B "$tmp/build" -G "$generator" -DEDO_LAYERING_SELFTEST=ON -DEDO_GUI=OFF -DEDO_CUDA=OFF \
     -DEDO_BUILD_BENCH=OFF -DEDO_BUILD_TESTS=OFF >"$tmp/log" 2>&1; then
  echo "FAIL: the configure accepted core/edo_stats linking db/edo_db"
  exit 1
fi
if ! tr -s ' \n' ' ' <"$tmp/log" | grep -q "core/edo_stats links db/edo_db"; then
  echo "FAIL: the configure failed without naming the wrong-way link:"
  cat "$tmp/log"
  exit 1
fi
echo "ok: the configure refuses core/edo_stats linking db/edo_db"
