#!/bin/sh
# Usage: wrong_way_include_test.sh SOURCE_DIR GENERATOR
# Configured with EDO_LAYERING_SELFTEST_INCLUDE=ON, core's edo_stats gets a file that includes a
# db header, cli's edo_cli_app one that includes the tracer's private src/events.h, and the
# tuner's measure/ folder one that includes a header of its io/ folder (above it in the
# tuner's folder order): the configure must fail and name the three includes
# (cmake/EdoLayers.cmake and cmake/EdoFolderOrder.cmake read #include edges).
src=$1
generator=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if cmake -S "$src" -B "$tmp/build" -G "$generator" -DEDO_LAYERING_SELFTEST_INCLUDE=ON -DEDO_GUI=OFF -DEDO_CUDA=OFF \
     -DEDO_BUILD_BENCH=OFF -DEDO_BUILD_TESTS=OFF >"$tmp/log" 2>&1; then
  echo "FAIL: the configure accepted core including db, cli including the tracer's src/ and measure/ including io/"
  exit 1
fi
flat=$(tr -s ' \n' ' ' <"$tmp/log")
for want in "core/edo_stats includes db/include/edo/db/profile_store.h (tests/integration/layers/wrong_way_include.cpp)" \
            "cli/edo_cli_app includes profiler/capture/src/events.h, a private header of profiler" \
            "tuner/src/measure/ includes tuner/src/io/text.h (tests/integration/layers/wrong_way_folder_include.cpp): io/ is above measure/ in the order of tuner/src"; do
  case $flat in
    *"$want"*) ;;
    *) echo "FAIL: the configure failed without saying: $want"; cat "$tmp/log"; exit 1 ;;
  esac
done
echo "ok: the configure refuses a wrong-way include, an include of another part's src/ and a wrong-way include between a part's folders"
