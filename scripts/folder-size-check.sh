#!/usr/bin/env bash
# No source folder of the product holds more than about 20 files without sub-folders that name
# its parts (issue 36): a reader finds a part by its folder, not by scanning 60 file names.
# Counts the source files (.c .cpp .h .cu .cuh .py) directly in each folder of the parts
# (core profiler db kernels collector tuner cli gui) and exits 1, naming each folder that holds
# more than `limit` (20) of them.
#
#   scripts/folder-size-check.sh [SOURCE_DIR]
set -uo pipefail
limit=20
cd "${1:-$(dirname "$0")/..}" || exit 2
bad=0
while read -r count dir; do
  if ((count > limit)); then
    echo "$dir holds $count source files (at most $limit): split it into sub-folders named after its parts (docs/architecture.md \"Folders\")" >&2
    bad=1
  fi
done < <(find core profiler db kernels collector tuner cli gui -type f \
           \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.py' \) \
           -not -path '*/__pycache__/*' -printf '%h\n' | sort | uniq -c)
exit $bad
