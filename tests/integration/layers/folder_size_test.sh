#!/bin/sh
# Usage: folder_size_test.sh SOURCE_DIR
# scripts/folder-size-check.sh passes on the source tree, and fails, naming the folder, on a
# copy of a part's layout with 21 source files in one folder.
src=$1
"$src/scripts/folder-size-check.sh" "$src" || { echo "FAIL: a source folder of the tree is too large (above)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-folders.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tuner/src/measure" "$tmp/core" "$tmp/profiler" "$tmp/db" "$tmp/kernels" "$tmp/collector" "$tmp/cli" "$tmp/gui"
for i in $(seq 1 20); do : >"$tmp/tuner/src/measure/f$i.cpp"; done
"$src/scripts/folder-size-check.sh" "$tmp" 2>"$tmp/log" || { echo "FAIL: 20 files in a folder were refused"; cat "$tmp/log"; exit 1; }
: >"$tmp/tuner/src/measure/f21.h"
if "$src/scripts/folder-size-check.sh" "$tmp" 2>"$tmp/log"; then
  echo "FAIL: 21 files in tuner/src/measure were accepted"
  exit 1
fi
grep -q "tuner/src/measure holds 21 source files (at most 20)" "$tmp/log" || { echo "FAIL: the check did not name the folder"; cat "$tmp/log"; exit 1; }
echo "ok: no source folder holds more than 20 files"
