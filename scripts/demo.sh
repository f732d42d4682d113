#!/usr/bin/env bash
# `make demo`: the whole workflow on the bundled jobs, on this machine.
# Usage: scripts/demo.sh BUILD_DIR [OUT_DIR]      (default build, out/demo)
#  1. edo record of examples/dlrm_like.py (a DLRM-like PyTorch training job; --weights, so that
#     the tuner's errors are on the job's own weights) and of examples/cpp (a C++ job through
#     edo.h), each with edo report;
#  2. edo tune at half the tables' recorded memory, edo export --format json and torchrec;
#  3. edo tune again with the formats edo.apply_plan converts in a plain PyTorch model, and
#     edo.apply_plan on the bundled model (the bytes it saved);
#  4. edo-dashboard --screenshot (offscreen) of the recording and of the plan;
#  5. a trial run of that plan on the unchanged job (edo record --apply-plan) and edo diff --plan's
#     verdict beside the first recording;
#  then where each file is, the command that opens the dashboard, and the backend measured on.
# Without a python3 that imports torch, the PyTorch steps are replaced by `edo synth` (a
# synthetic Zipf workload) and apply_plan is left out, saying so.
# `make demo` builds only what this needs (the CMake target demo_targets).
set -euo pipefail
build=${1:-build}
out=${2:-out/demo}
edo="$build/bin/edo"
dash="$build/bin/edo-dashboard"
cpp_job="$build/bin/edo-embedding-job"
[[ -x $edo ]] || { echo "demo: $edo not found; run 'make demo' (or cmake --build $build --target demo_targets) first" >&2; exit 1; }
mkdir -p "$out"
# Each run starts afresh: the files of an earlier demo are replaced.
rm -f "$out"/{dlrm.edodb,synth.edodb,cpp.edodb,trial.edodb,plan.json,plan_torchrec.py,plan-pytorch.json,overview.png,tuner.png,tables.png}
log="$out/.demo.log"

if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold="" plain=""; fi
step() { printf '\n%s== %s%s\n$ %s\n' "$bold" "$1" "$plain" "$2"; }
run_quiet() {  # the command's output only when it fails
  "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "demo: '$*' failed" >&2; exit 1; }
}

# EDO_PYTHON: the python3 to run the PyTorch job with (and only that one); else the first of
# these that imports torch.
torch_python=""
candidates=(/usr/bin/python3 python3)
[[ -n ${EDO_PYTHON:-} ]] && candidates=("$EDO_PYTHON")
for py in "${candidates[@]}"; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then torch_python=$py; break; fi
done
# A plain python3 for reading edo's JSON (torch not needed).
py=${torch_python:-python3}

if [[ -n $torch_python ]]; then db="$out/dlrm.edodb"; else db="$out/synth.edodb"; fi
# The job runs on the GPU when its PyTorch has one (then edo records the device memory timeline
# and the kernels too).
job_args=()
if [[ -n $torch_python ]] && "$torch_python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  job_args=(--device cuda)
fi
if [[ -n $torch_python ]]; then
  step "1. Record the bundled DLRM-like PyTorch job (no code change)" \
       "edo record --weights -o $db -- $torch_python examples/dlrm_like.py${job_args[*]:+ ${job_args[*]}}"
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$edo" record --weights -o "$db" -- "$torch_python" examples/dlrm_like.py "${job_args[@]}"
else
  step "1. No python3 with torch here (set EDO_PYTHON): a synthetic Zipf workload instead" \
       "edo synth -o $db --tables 4 --rows 100000 --dim 32 --zipf 1.05 --lookups 400000"
  "$edo" synth -o "$db" --tables 4 --rows 100000 --dim 32 --zipf 1.05 --lookups 400000
fi
step "   Its report" "edo report $db"
"$edo" report "$db"

if [[ -x $cpp_job ]]; then
  step "1b. Record a C++ job that tells edo about its tables through edo.h (examples/cpp)" \
       "edo record -o $out/cpp.edodb -- $cpp_job"
  "$edo" record -o "$out/cpp.edodb" -- "$cpp_job"
  "$edo" report "$out/cpp.edodb"
fi

# Half of what the tables held (weights, optimizer state, gradients) as recorded.
recorded=$("$edo" report --json "$db" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["memory"]["table_bytes"])')
budget=$((recorded / 2))
step "2. Tune: every strategy for every table, measured here, under half the recorded memory ($budget of $recorded bytes)" \
     "edo tune $db --budget $budget --time-limit 120"
"$edo" tune "$db" --budget "$budget" --time-limit 120 | tee "$log"
backend=$(sed -n 's/^measured on: //p' "$log" | head -n1)
step "   The plan as JSON and as TorchRec constraints" \
     "edo export $db --format json -o $out/plan.json; edo export $db --format torchrec -o $out/plan_torchrec.py"
"$edo" export "$db" --format json -o "$out/plan.json"
"$edo" export "$db" --format torchrec -o "$out/plan_torchrec.py"
# One line per table: the compute kernel its ParameterConstraints asks TorchRec for.
awk '/^constraints = /{c=1} c&&/^}/{c=0} c&&/^    "/{split($0,q,"\""); t=q[2]}
     c&&/compute_kernels=/{k=$0; sub(/.*EmbeddingComputeKernel\./,"",k); sub(/\.value.*/,"",k); printf "  %-18s %s\n", t, k}' "$out/plan_torchrec.py"

if [[ -x $dash ]]; then
  step "3. Dashboard pictures of the recording and of the plan (offscreen)" \
       "edo-dashboard $db --screenshot $out/overview.png --view overview (and tables, tuner)"
  "$dash" "$db" --screenshot "$out/overview.png" --view overview --size 1280x800
  "$dash" "$db" --screenshot "$out/tables.png" --view tables --size 1280x800
  "$dash" "$db" --screenshot "$out/tuner.png" --view tuner --size 1280x800
fi

if [[ -n $torch_python ]]; then
  step "4. Apply a plan in plain PyTorch: tune with the formats edo.apply_plan converts in place" \
       "edo tune $db --budget $budget --strategies fp16,bf16,int8 --time-limit 120; edo export $db -o $out/plan-pytorch.json"
  # Offload, pruning and hashing need TorchRec/FBGEMM or a change to the model; fp16/bf16 (and
  # int8 for serving) are tensor conversions that edo.apply_plan makes itself.
  if "$edo" tune "$db" --budget "$budget" --strategies fp16,bf16,int8 --time-limit 120 >"$log" 2>&1; then
    sed -n '/^plan: /p;/^TABLE /,$p' "$log"
    "$edo" export "$db" --format json -o "$out/plan-pytorch.json"
    step "   edo.apply_plan(model, plan) on the bundled model, then its training steps" \
         "PYTHONPATH=$build/lib/python $torch_python examples/dlrm_like.py${job_args[*]:+ ${job_args[*]}} --apply-plan $out/plan-pytorch.json"
    PYTHONPATH="$build/lib/python${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} \
      "$torch_python" examples/dlrm_like.py "${job_args[@]}" --apply-plan "$out/plan-pytorch.json" >"$log" 2>&1 ||
      { cat "$log" >&2; echo "demo: examples/dlrm_like.py --apply-plan failed" >&2; exit 1; }
    sed -n 's/^dlrm_like: applied //p' "$log" | "$py" -c '
import json, sys
for name, r in sorted(json.load(sys.stdin).items()):
    if r["applied"] and r["before_bytes"] != r["after_bytes"]:
        print("  %-18s %-5s %9d -> %9d bytes  %s" % (name, r["strategy"], r["before_bytes"], r["after_bytes"], r["why"]))'
    grep -E '^dlrm_like: (apply_plan|[0-9]+ steps)' "$log"
    # The same plan proven on the job itself, with no code change: the hooks apply it when the
    # model is built, the recording keeps each step's loss, and edo diff --plan judges the trial
    # beside the first recording (the baseline).
    step "5. A trial run of the plan on the unchanged job, judged beside the first recording" \
         "edo record --apply-plan $out/plan-pytorch.json -o $out/trial.edodb -- $torch_python examples/dlrm_like.py${job_args[*]:+ ${job_args[*]}}; edo diff --plan $out/plan-pytorch.json $out/trial.edodb $db"
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$edo" record --apply-plan "$out/plan-pytorch.json" -o "$out/trial.edodb" -- \
      "$torch_python" examples/dlrm_like.py "${job_args[@]}" >"$log" 2>&1 ||
      { cat "$log" >&2; echo "demo: the trial run failed" >&2; exit 1; }
    grep -E '^edo: applied plan |^dlrm_like: [0-9]+ steps' "$log" || true
    # Exit 1 means the plan did not hold: the verdict says why, and the demo goes on.
    "$edo" diff --plan "$out/plan-pytorch.json" "$out/trial.edodb" "$db" >"$log" 2>&1 || true
    sed -n '/^table /,$p' "$log"
  else
    # No plan of these formats fits half the memory: the tuner names the smallest budget.
    grep -E '^edo tune' "$log" | tail -n 1
  fi
else
  step "4. edo.apply_plan needs PyTorch: left out" "(set EDO_PYTHON to a python3 with torch)"
fi

printf '\n%s== Files%s\n' "$bold" "$plain"
for f in "$db" "$out/cpp.edodb" "$out/trial.edodb" "$out/plan.json" "$out/plan_torchrec.py" "$out/plan-pytorch.json" \
         "$out/overview.png" "$out/tables.png" "$out/tuner.png"; do
  if [[ -f $f ]]; then
    case $f in
      *dlrm.edodb) what="the recording, with the tuner's runs (edo report / diff / tune / export)";;
      *synth.edodb) what="the synthetic workload's profile, with the tuner's runs";;
      *cpp.edodb) what="the C++ job's recording";;
      *trial.edodb) what="the trial run of plan-pytorch.json (edo diff --plan judges it)";;
      *plan.json) what="the plan (edo.plan/1 JSON)";;
      *torchrec.py) what="the plan for TorchRec's sharding planner";;
      *plan-pytorch.json) what="the plan that edo.apply_plan applied";;
      *) what="dashboard picture";;
    esac
    printf '  %-34s %s\n' "$f" "$what"
  fi
done
rm -f "$log"
echo
echo "Measured on: ${backend:-(no tune run)}"
if [[ -x $dash ]]; then
  echo "Open the dashboard: $edo dashboard $db"
else
  echo "The dashboard was not built (Qt 6 missing): scripts/install-deps.sh installs it."
fi
echo "More: $edo --help; README.md"
