#!/usr/bin/env bash
# Many tables (issue 31): the time and peak memory of edo's commands on a recording of many
# tables, each beside its target. Usage: bench/scale/run.sh BUILD [TABLES] [LOOKUPS_PER_TABLE]
#
#   synth      edo synth of TABLES tables, sizes log-uniform 100..1M rows, Zipf 0.6..1.2
#   report     edo report (text), and --json              target (10,000 tables) < 3 s, < 1 GiB
#   tune       edo tune --time-limit 300, budget half the tables' bytes: < 315 s, < 4 GiB, a plan;
#              and --time-limit 30: < 31.5 s, a plan
#   dashboard  edo dashboard --screenshot (offscreen): first paint from process start, and peak
#              memory of the whole load                  target (10,000 tables) < 1 s, < 1.5 GiB
#   diff       edo diff of two TABLES-table recordings (and of EDO_SCALE_BIG=FILE, a 200,000-table
#              recording, with a copy: < 30 s); merge: 8 ranks x 1,000 tables < 10 s
#   export     edo export of a plan of 20x TABLES tables (json/yaml/torchrec), from a plan file
#              made by repeating a small real plan's tables; 200,000 tables < 30 s
#   record     edo record of many_tables_job (TABLES tables, LOOKUPS_PER_TABLE each): every
#              table exact against the job's truth (check_truth.py), job growth within the cap
#
# Prints one line per figure: NAME  seconds  peak MiB  target. Needs /usr/bin/time and python3.
set -uo pipefail
build=${1:-build}
tables=${2:-10000}
lookups=${3:-10000}
edo="$build/bin/edo"
[[ -x $edo ]] || { echo "bench/scale: $edo not built (make build)"; exit 77; }
command -v /usr/bin/time >/dev/null || { echo "bench/scale: /usr/bin/time missing (apt-get install time)"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
measure() {  # NAME TARGET command...
  local name=$1 target=$2; shift 2
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" >"$work/out" 2>"$work/err" || { echo "$name: failed: $(tail -1 "$work/err")"; return 1; }
  read -r s kb <"$work/t"
  printf '%-26s %8.2f s %8.0f MiB   target %s\n' "$name" "$s" "$((kb / 1024))" "$target"
}
measure "synth $tables tables" "< 120 s (10,000 tables, 100M lookups)" \
  "$edo" synth -o "$work/many.edodb" --tables "$tables" --min-rows 100 --rows 1000000 --min-zipf 0.6 --zipf 1.2 --lookups "$lookups" || exit 1
measure "synth 2000x2000x4M" "< 30 s" "$edo" synth -o "$work/long.edodb" --tables 2000 --rows 2000 --lookups 4000000 && rm -f "$work/long.edodb"
measure "report" "< 3 s, < 1024 MiB" "$edo" report "$work/many.edodb"
measure "report --json" "< 3 s, < 1024 MiB" "$edo" report --json "$work/many.edodb"
# edo tune (issue 31): the whole command within --time-limit 300 (+5 %), a plan for half the
# tables' bytes (read from the report), peak memory bounded. Exits 1 (reported failed) without a plan.
budget=$("$edo" report --json "$work/many.edodb" | python3 -c 'import json,sys; print(sum(t["total_bytes"] for t in json.load(sys.stdin)["tables"]) // 2)')
measure "tune $tables tables" "< 315 s, < 4096 MiB (--time-limit 300)" "$edo" tune "$work/many.edodb" --budget "$budget" --time-limit 300
# A short limit: setting up (the held-out replays: 25-45 s at 10,000 tables) shares it too.
measure "tune --time-limit 30" "< 31.5 s, a plan" "$edo" tune "$work/many.edodb" --budget "$budget" --time-limit 30
# The dashboard prints its first paint (EDO_DASHBOARD_TIMING=1); the screenshot waits for the
# whole recording, so the peak is that of a complete load.
if [[ -x $build/bin/edo-dashboard ]]; then
  if EDO_DASHBOARD_TIMING=1 QT_QPA_PLATFORM=offscreen /usr/bin/time -f "%e %M" -o "$work/t" \
       "$edo" dashboard "$work/many.edodb" --screenshot "$work/tables.png" --view tables >"$work/out" 2>"$work/err"; then
    read -r s kb <"$work/t"
    ms=$(sed -n 's/.*first paint after \([0-9]*\) ms.*/\1/p' "$work/err" | head -1)
    printf '%-26s %8.2f s %8.0f MiB   target %s\n' "dashboard first paint" "$(awk "BEGIN{print ${ms:-0}/1000}")" \
      "$((kb / 1024))" "< 1 s, < 1536 MiB (all of --screenshot: ${s} s)"
  else
    echo "dashboard: failed: $(tail -1 "$work/err")"
  fi
else
  echo "dashboard: $build/bin/edo-dashboard not built (Qt 6 missing?)"
fi
# edo diff of two recordings of TABLES tables (the second a copy: every table compared).
cp "$work/many.edodb" "$work/many2.edodb"
measure "diff $tables tables" "linear in tables (< 30 s at 200,000 tables: ~1.5 s at 10,000)" "$edo" diff "$work/many.edodb" "$work/many2.edodb"
rm -f "$work/many2.edodb"
# edo diff at 200,000 tables (issue 31: < 30 s): a recording that large takes `edo synth` about
# 6 minutes (--tables 200000 --min-rows 100 --rows 100000 --min-zipf 0.6 --zipf 1.2 --lookups
# 1000), so it is made once and named here: EDO_SCALE_BIG=FILE; diffed against a copy of itself.
if [[ -n ${EDO_SCALE_BIG:-} ]]; then
  cp "$EDO_SCALE_BIG" "$work/big2.edodb"
  measure "diff $(basename "$EDO_SCALE_BIG")" "< 30 s at 200,000 tables" "$edo" diff "$EDO_SCALE_BIG" "$work/big2.edodb"
  rm -f "$work/big2.edodb"
fi
# edo merge of 8 ranks of 1,000 tables each (bench_merge: made in-process, merged by edo's merge).
if [[ -x $build/bin/bench_merge ]]; then
  "$build/bin/bench_merge" --ranks 8 --tables 1000 --lookups 10000 --dir "$work/merge" >"$work/out" 2>&1 &&
    printf '%-26s %8.2f s %8.0f MiB   target %s\n' "merge 8 x 1000 tables" \
      "$(sed -n 's/.*project: edo merge.* \([0-9.]*\) s$/\1/p' "$work/out")" \
      "$(sed -n 's/.*its own process): \([0-9.]*\) MiB.*/\1/p' "$work/out")" "< 10 s" ||
    echo "merge: failed: $(tail -1 "$work/out")"
  rm -rf "$work/merge"
fi
# A small real plan, its tables repeated under new names: export cost per table.
"$edo" synth -o "$work/small.edodb" --tables 4 --rows 20000 --dim 16 --lookups 100000 >/dev/null 2>&1
"$edo" tune "$work/small.edodb" --budget 1MiB --time-limit 60 >/dev/null 2>&1
"$edo" export "$work/small.edodb" -o "$work/small.json" >/dev/null 2>&1 || { echo "bench/scale: no plan to export"; exit 1; }
n=$((tables * 20))
python3 - "$work/small.json" "$work/big.json" "$n" <<'PY'
import copy, json, sys
plan = json.load(open(sys.argv[1])); n = int(sys.argv[3]); small = plan["tables"]
plan["tables"] = []
for i in range(n):
    t = copy.deepcopy(small[i % len(small)]); t["name"] = "t%07d" % i; t["why"] = t["why"][:80]
    plan["tables"].append(t)
json.dump(plan, open(sys.argv[2], "w"))
PY
for f in json yaml torchrec; do
  measure "export $n tables $f" "< 30 s at 200,000 tables" "$edo" export "$work/big.json" --format "$f" -o "$work/out.$f"
done
# edo record of TABLES realistic tables (many_tables_job.c: 100..1M rows, power-law reads,
# LOOKUPS_PER_TABLE each): every table counted exactly (checked against the job's truth file by
# check_truth.py), the job's growth within its cap (docs/memory.md): EDO_MAX_MEMORY_MB (default
# 4096 MiB) + the queued batches (EDO_MAX_BUFFER_MB, 256 MiB, at most the job's indices) + 32 MiB
# (a host job has no GPU events). The growth is the job's peak over its whole process, the
# tracer's exit-time counting and last flush included (the job reports its worker's ru_maxrss),
# less its resident memory before the first edo call; the figure after "s" is edo record's own
# peak (the collector's, or the job's when larger).
job="$build/bin/many_tables_job"
if [[ -x $job ]]; then
  queue_mib=$((tables * lookups * 8 / 1048576)); ((queue_mib > 256)) && queue_mib=256
  cap_mib=$((4096 + queue_mib + 32))
  if measure "record $tables tables" "every table exact; job growth < $cap_mib MiB" \
    "$edo" record -o "$work/rec.edodb" -- "$job" "$tables" "$lookups" "$work/truth.txt"; then
    before=$(sed -n 's/^rss_before_kib \([0-9]*\).*/\1/p' "$work/out")
    peak=$(sed -n 's/^rss_exit_peak_kib \([0-9]*\).*/\1/p' "$work/out")
    echo "  job growth (peak - RSS before): $(((peak - before) / 1024)) MiB (cap $cap_mib MiB); $(grep -h 'dropped events' "$work/err")"
    "$edo" report --json "$work/rec.edodb" >"$work/rec.json" 2>/dev/null
    echo "  $(python3 "$(dirname "$0")/check_truth.py" "$work/rec.json" "$work/truth.txt" | tail -1)"
  fi
else
  echo "record $tables tables: $job not built"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
