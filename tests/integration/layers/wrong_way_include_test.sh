#!/bin/sh
# Usage: wrong_way_include_test.sh SOURCE_DIR GENERATOR
# Configured with EDO_LAYERING_SELFTEST_INCLUDE=ON, core's edo_stats gets a file that includes a
# db header and cli's edo_cli_app one that includes the tracer's private src/events.h: the
# configure must fail and name both includes (cmake/EdoLayers.cmake reads #include edges).
src=$1
generator=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if cmake -S "$src" -B "$tmp/build" -G "$generator" -DEDO_LAYERING_SELFTEST_INCLUDE=ON -DEDO_GUI=OFF -DEDO_CUDA=OFF \
     -DEDO_BUILD_BENCH=OFF -DEDO_BUILD_TESTS=OFF >"$tmp/log" 2>&1; then
  echo "FAIL: the configure accepted core including db and cli including the tracer's src/"
  exit 1
fi
flat=$(tr -s ' \n' ' ' <"$tmp/log")
for want in "core/edo_stats includes db/include/edo/db/profile_store.h (tests/integration/layers/wrong_way_include.cpp)" \
            "cli/edo_cli_app includes profiler/capture/src/events.h, a private header of profiler"; do
  case $flat in
    *"$want"*) ;;
    *) echo "FAIL: the configure failed without saying: $want"; cat "$tmp/log"; exit 1 ;;
  esac
done
echo "ok: the configure refuses a wrong-way include and an include of another part's src/"
