#!/bin/bash
# One recording, one budget, N runs of edo tune: how many distinct plans (issue 29 point 8).
# usage: runspeed.sh EDO N OBJECTIVE BUDGET  (prints "count plan" lines)
E=${1:?edo binary}; N=${2:-10}; OBJ=${3:-speed}; BUDGET=${4:-40MiB}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$E" synth -o "$W/base.edodb" --tables 4 --rows 200000 --dim 64 --lookups 1000000 >/dev/null 2>&1
for i in $(seq 1 "$N"); do
  cp "$W/base.edodb" "$W/r.edodb"
  "$E" tune "$W/r.edodb" --budget "$BUDGET" --objective "$OBJ" --json --time-limit 120 2>/dev/null |
    python3 -c "import json,sys; print(' '.join(t['spec'] for t in json.load(sys.stdin)['tables']))"
done | sort | uniq -c
