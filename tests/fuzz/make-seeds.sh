#!/usr/bin/env bash
# Regenerates the seed inputs of tests/fuzz/corpus/ from a build of this tree (the committed
# seeds were made this way). Only seed-* files are replaced: regress-* inputs stay, and so do
# old-* inputs (databases of earlier schema versions, which exercise the migrations).
#
#   tests/fuzz/make-seeds.sh [BUILD]     # BUILD defaults to build/
#
# wire:     the unit tests' sample stream (every message type, two sessions), each of its
#           frames alone, and real EDO_OUTPUT traces of tests/integration/tracer's job
# db_file:  small databases from `edo synth` and `edo record` (page size 512, vacuumed, so
#           mutations reach every structure), an SQLite file that is not an edo database
# db_edit:  a few edit programs (see db/fuzz_db_edit.cpp)
# cli_args: a valid command line of every subcommand ('\0' between arguments)
# size:     the spellings tuner/include/edo/tuner/size.h documents
# plan:     a plan of a small `edo synth` recording as `edo tune --json` and `edo export --format
#           yaml` write it (seed-plan.json, seed-plan.yaml; the hand-made seed-infeasible.json
#           and seed-tied-names.json stay)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
c=tests/fuzz/corpus
for t in edo tracer_job; do
  [[ -x $build/bin/$t ]] || { echo "make-seeds: $build/bin/$t missing (cmake --build $build --target $t)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p $c/wire $c/db_file $c/db_edit $c/cli_args $c/size $c/plan
rm -f $c/wire/seed-* $c/db_file/seed-* $c/db_edit/seed-* $c/cli_args/seed-* $c/size/seed-*

# --- wire
cat >"$tmp/gen.cpp" <<'CPP'
#include <cstdio>
#include <fstream>
#include "sample_trace.h"
int main(int, char** argv) {
  std::vector<size_t> ends;
  const std::string s = edo::wire::sample::sample_stream(&ends);
  std::ofstream(std::string(argv[1]) + "/seed-sample-stream", std::ios::binary) << s;
  size_t start = 0;
  for (size_t i = 0; i < ends.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/seed-frame-%02zu", i);
    std::ofstream(std::string(argv[1]) + name, std::ios::binary) << s.substr(start, ends[i] - start);
    start = ends[i];
  }
}
CPP
c++ -std=c++20 -O1 -Itests/unit/wire -Iprofiler/wire/include -Icore/stats/include "$tmp/gen.cpp" \
  "$build/lib/static/libedo_wire.a" "$build/lib/static/libedo_stats.a" -o "$tmp/gen"
"$tmp/gen" $c/wire
for mode in basic fork exec; do
  env -u EDO_CHANNEL LD_PRELOAD="$build/lib/libedo_trace.so" NVTX_INJECTION64_PATH="$build/lib/libedo_trace.so" \
    EDO_OUTPUT="$tmp/trace-$mode" "$build/bin/tracer_job" $mode 0 >/dev/null
  cat "$tmp"/trace-$mode* >$c/wire/seed-tracer-job-$mode
done

# --- db_file
small() {  # copy of a database with 512-byte pages, vacuumed
  cp "$1" "$2"
  sqlite3 "$2" "PRAGMA journal_mode=DELETE; PRAGMA page_size=512; VACUUM;" >/dev/null
}
"$build/bin/edo" synth -o "$tmp/synth.edodb" --tables 2 --rows 300 --dim 8 --lookups 3000 --batch 500 2>/dev/null
small "$tmp/synth.edodb" $c/db_file/seed-synth
"$build/bin/edo" record -o "$tmp/rec.edodb" -- "$build/bin/tracer_job" basic 3 >/dev/null 2>&1 || true
small "$tmp/rec.edodb" $c/db_file/seed-record-tracer-job
sqlite3 "$tmp/other.db" "PRAGMA page_size=512; CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 'x');"
cp "$tmp/other.db" $c/db_file/seed-not-edo-sqlite

# --- db_edit: op, then its operands (see fuzz_db_edit.cpp)
# column numbers index kColumns, values index bind_value()'s cases
printf '\x00\x13\x00\x03' >$c/db_edit/seed-rows-to-int64-max          # UPDATE tables.rows = INT64_MAX
printf '\x01\x12\x00\x0b' >$c/db_edit/seed-name-with-escapes           # UPDATE tables.name = '\n\t\e[31m...'
printf '\x00\x13\x00\x07' >$c/db_edit/seed-rows-to-1e308              # a REAL where an integer belongs
printf '\x0c\x00\x00\x10\x04\xff\xff\xff\xff' >$c/db_edit/seed-blob-patch
printf '\x0d\x01\x00\x40\x02\x00\x00' >$c/db_edit/seed-blob-cut
printf '\x09\x02' >$c/db_edit/seed-drop-tables
printf '\x0e\x02' >$c/db_edit/seed-schema-version-newer
printf '\x0a\x13' >$c/db_edit/seed-drop-column-rows
printf '\x02\x1d\x00\x00\x03\x26\x00\x07' >$c/db_edit/seed-lookups-and-bytes

# --- cli_args
args() { local name=$1; shift; printf '%s\0' "$@" >$c/cli_args/seed-$name; }
args record record -o run.edodb --force --flush-ms 100 --exact-rows 1000 -- python3 train.py --lr 0.1
args report report run.edodb --json --top 10
args diff diff a.edodb b.edodb --json
args synth synth -o x.edodb --tables 3 --rows 1000 --dim 16 --dtype f16 --zipf 1.2 --lookups 5000 --batch 100 --seed 7 --exact-rows 100 --window-batches 4
args import import a.trace b.trace -o out.edodb
args bench bench --backend cpu --rows 1000 --dim 8 --batch 256 --pooling 8 --zipf 1.1 --strategies fp32,int8,pq:m=4 --threads 1 --reps 1 --sets 1 --json -q
args tune tune run.edodb --budget 24GiB --max-error 0.01 --backend cpu --tables 'emb.*' --strategies fp32,fp16,int8 --time-limit 60 --seed 3 --threads 1 --reps 3 --measure-bytes 64MiB --json
args export export run.edodb --format torchrec -o plan.py
args env env -o job.trace
args help --help
args version --version

# --- plan
"$build/bin/edo" synth -o "$tmp/plan.edodb" --tables 2 --rows 3000 --dim 16 --zipf 1.1 --lookups 20000 --seed 5 >/dev/null 2>&1
"$build/bin/edo" tune "$tmp/plan.edodb" --budget 150KB --max-error inf --backend cpu --strategies int8,pq,offload --reps 1 --json \
  >$c/plan/seed-plan.json 2>/dev/null
"$build/bin/edo" export "$tmp/plan.edodb" --format yaml -o $c/plan/seed-plan.yaml
# a plan over 3 devices (each table row-wise: 192 KB on devices of 150 KB)
"$build/bin/edo" tune "$tmp/plan.edodb" --devices 3 --budget 150KB --max-error 0 --backend cpu --strategies fp16 --reps 1 --json \
  >$c/plan/seed-devices.json 2>/dev/null

# --- size
for s in 24GiB 500MB 1.5TiB 4096 "24 GiB" 0.1GB 18446744073709551615 1kB 7PiB; do
  printf '%s' "$s" >"$c/size/seed-$(printf '%s' "$s" | tr ' .' '_p')"
done
echo "make-seeds: $(find $c -name 'seed-*' | wc -l) seed inputs under $c"
