#!/usr/bin/env bash
# Tests must leave nothing in the source tree (a database named after a path SQLite reads
# specially, a script's output next to it, a __pycache__): `make test` lists the files that
# are neither tracked nor in a build folder before the suite and compares after it.
#
#   scripts/source-tree-check.sh before LIST    write the list of such files to LIST
#   scripts/source-tree-check.sh after LIST     exit 1, naming them, when files were added
#
# Outside a git checkout there is nothing to compare with: both steps do nothing.
set -uo pipefail
if [[ $# -ne 2 || ( $1 != before && $1 != after ) ]]; then
  echo "usage: source-tree-check.sh before|after LIST" >&2
  exit 2
fi
step=$1 list=$(realpath -m "$2")
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
# Untracked and ignored files, whole folders as one line; build folders are where tests write.
files() { git ls-files --others --directory | grep -v -E '^build[^/]*/$' | LC_ALL=C sort; }
if [[ $step == before ]]; then
  files >"$list"
  exit 0
fi
[[ -f $list ]] || exit 0
added=$(LC_ALL=C comm -13 "$list" <(files))
if [[ -n $added ]]; then
  echo "the tests left files in the source tree (a test must write under its build folder or a temporary folder):" >&2
  printf '%s\n' "$added" | sed 's/^/  /' >&2
  exit 1
fi
