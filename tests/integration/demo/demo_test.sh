#!/usr/bin/env bash
# scripts/demo.sh (what `make demo` runs after building demo_targets) on this build, into a
# temporary folder: every step must succeed and leave its file, and the summary must say where
# the files are, how to open the dashboard and which backend was measured on.
# Usage: demo_test.sh SOURCE_DIR BUILD_DIR [no-torch]
# no-torch: as on a machine without PyTorch (EDO_PYTHON names no python): the synthetic workload
# stands in for the PyTorch job and apply_plan is left out, saying so.
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
mode=${3:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- demo output:"; cat "$tmp/demo.txt"; exit 1; }
# The torch the other PyTorch tests use (EDO_TEST_PYTHON), else the demo's own search.
if [[ $mode == no-torch ]]; then
  export EDO_PYTHON="$tmp/no-python-here"
elif [[ -n ${EDO_TEST_PYTHON:-} ]]; then
  export EDO_PYTHON=$EDO_TEST_PYTHON
fi
out="$tmp/out"
(cd "$src" && scripts/demo.sh "$build" "$out") >"$tmp/demo.txt" 2>&1 || fail "scripts/demo.sh exited $?"

has_torch=0
grep -q '^== 1. Record the bundled DLRM-like PyTorch job' "$tmp/demo.txt" && has_torch=1
if [[ $mode == no-torch ]]; then
  ((has_torch == 0)) || fail "EDO_PYTHON named no python, yet the demo ran the PyTorch job"
  grep -q '^== 4. edo.apply_plan needs PyTorch: left out' "$tmp/demo.txt" || fail "the demo did not say that apply_plan was left out"
fi
db="$out/dlrm.edodb"
((has_torch)) || db="$out/synth.edodb"
need=("$db" "$out/plan.json" "$out/plan_torchrec.py")
[[ -x $build/bin/edo-embedding-job ]] && need+=("$out/cpp.edodb")
[[ -x $build/bin/edo-dashboard ]] && need+=("$out/overview.png" "$out/tables.png" "$out/tuner.png")
((has_torch)) && need+=("$out/plan-pytorch.json")
for f in "${need[@]}"; do
  [[ -s $f ]] || fail "the demo left no $f"
  grep -qF "  $f " "$tmp/demo.txt" || fail "the demo's file list does not name $f"
done
for f in "$out"/*.png; do
  [[ $(head -c 8 "$f" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$f is not a PNG"
done
[[ ! -e $out/.demo.log ]] || fail "the demo left its log behind"

# What the user is told at the end.
grep -qE '^Measured on: (CPU|CUDA|GPU|NVIDIA).+' "$tmp/demo.txt" || fail "no 'Measured on:' line naming the backend"
if [[ -x $build/bin/edo-dashboard ]]; then
  grep -qxF "Open the dashboard: $build/bin/edo dashboard $db" "$tmp/demo.txt" || fail "no command that opens the dashboard"
fi
# The budget is half of the recorded table memory; the plan fits it.
recorded=$("$build/bin/edo" report --json "$db" | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory"]["table_bytes"])')
python3 - "$out/plan.json" "$recorded" <<'PY' || fail "plan.json is not a plan under half the recorded memory"
import json, sys
plan = json.load(open(sys.argv[1]))
half = int(sys.argv[2]) // 2
assert plan["schema"] == "edo.plan/1", plan.get("schema")
assert plan["budget_bytes"] == half, (plan["budget_bytes"], half)
PY
grep -q 'ParameterConstraints' "$out/plan_torchrec.py" || fail "plan_torchrec.py has no ParameterConstraints"
if ((has_torch)); then
  saved=$(sed -n 's/^dlrm_like: apply_plan converted .*, saved \([0-9]*\) bytes$/\1/p' "$tmp/demo.txt")
  [[ -n $saved && $saved -gt 0 ]] || fail "edo.apply_plan saved no bytes (or the line is missing)"
  grep -qE '^dlrm_like: [0-9]+ steps, final loss' "$tmp/demo.txt" || fail "the job with the plan applied did not train"
fi
echo "ok: scripts/demo.sh ran every step (torch: $has_torch) and listed its files"
