#!/usr/bin/env bash
# GPU step of the device model (docs/tuning.md "Device model"): `edo bench --backend cuda` on a
# 10M x 128 and a 10M x 64 table with the formats the model covers, then devmodel_check on each
# (the model with that GPU's own figures against its measured gathers), and the run's figures
# saved as a device profile (edo.device/1) under $RESULTS: compare it with the stored H200
# profile (tuner/src/measure/device_profiles_builtin.cpp) and update that file from it. Run by
# scripts/gpu-check.sh; it also runs alone. About 2 minutes on an H200.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RES=${RESULTS:-${OUT:-$ROOT/bench/results}}
mkdir -p "$RES"
BUILD=${EDO_BUILD:-${BUILD:-$ROOT/build-gpu}}
log() { echo "gpu-steps(devmodel): $*" >&2; }
. "$ROOT/scripts/lib/ensure-built.sh"
EDO_ROOT=$ROOT edo_ensure_built "$BUILD" "$RES/devmodel-gpu-build.log" edo devmodel_check || { log "no binaries to run"; exit 1; }
status=0
strategies=fp32,fp16,bf16,fp8,int8,int4,pq:m=16,lowrank:rank=16,multihash:buckets=2500000:k=2,qr:m=4,pruned
for dim in 128 64; do
  out="$RES/devmodel-bench-cuda-d$dim.json"
  log "edo bench --backend cuda, 10M x $dim"
  "$BUILD/bin/edo" bench --backend cuda --rows 10000000 --dim "$dim" --uniform --batch 2097152 --strategies "$strategies" \
    --json -q > "$out" || { status=1; continue; }
  "$BUILD/bin/devmodel_check" "$out" | tee "$RES/devmodel-check-cuda-d$dim.txt" || status=1
done
EDO_DEVICE_DIR="$RES/devices" "$BUILD/bin/edo" bench --backend cuda --rows 10000000 --dim 128 --uniform --batch 2097152 \
  --strategies fp32 -q --save-device "measured $(date +%F)" > /dev/null || status=1
log "device profile: $(ls "$RES"/devices/*.json 2>/dev/null)"
exit "$status"
