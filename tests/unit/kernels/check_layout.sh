#!/usr/bin/env bash
# The kernels' dependency rules (kernels/CMakeLists.txt), checked on the sources:
#   core (kernels/core, kernels/include) includes no backend's headers;
#   the CPU backend never includes the CUDA backend's, nor the CUDA backend the CPU's;
#   nothing includes headers through the repository root ("kernels/...").
# Usage: check_layout.sh REPO_ROOT. Prints every violation; exit 1 if there is one.
set -uo pipefail
root=${1:?repository root}
cd "$root/kernels" || exit 1
bad=0
check() {  # check DESCRIPTION PATTERN PATHS...
  local what=$1 pat=$2
  shift 2
  local hits
  hits=$(grep -rnE --include="*.cpp" --include="*.h" --include="*.cu" "$pat" "$@" 2>/dev/null)
  if [[ -n $hits ]]; then
    echo "kernels layout: $what:"
    echo "$hits"
    bad=1
  fi
}
check "core includes a backend" '#include "(cpu/|edo/kernels/(cpu|cuda|bench)\.h)' core include/edo/kernels/formats \
  include/edo/kernels/strategy.h include/edo/kernels/encode.h include/edo/kernels/backend.h include/edo/kernels/workload.h \
  include/edo/kernels/lru.h include/edo/kernels/host_buffer.h
check "the CPU backend includes the CUDA backend" '#include "edo/kernels/cuda\.h"|cuda::' cpu
check "the CUDA backend includes the CPU backend" '#include "(cpu/|edo/kernels/cpu\.h)"|cpu::' cuda
check "an include through the repository root" '#include "kernels/' . ../tests ../bench ../cli
exit $bad
