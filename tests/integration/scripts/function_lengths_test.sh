#!/bin/sh
# scripts/function-lengths.py on a file of known functions (tricky.cpp: braces in comments,
# strings, raw strings, character literals, a lambda inside a function and one at namespace
# scope, a constructor's brace initializers, an extern "C" block): exactly the expected lines,
# and --check fails when any function is listed, passes when none is.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
script="$1/scripts/function-lengths.py"
cd "$here/function_lengths"
python3 "$script" --min 0 tricky.cpp > /tmp/function_lengths_$$.txt
if ! diff -u expected.txt /tmp/function_lengths_$$.txt; then
  rm -f /tmp/function_lengths_$$.txt; echo "FAIL: function-lengths.py listed other functions"; exit 1
fi
rm -f /tmp/function_lengths_$$.txt
if python3 "$script" --min 7 --check tricky.cpp >/dev/null 2>&1; then
  echo "FAIL: --check passed with eight() over 7 lines"; exit 1
fi
python3 "$script" --min 8 --check tricky.cpp >/dev/null 2>&1 || { echo "FAIL: --check failed with no function over 8 lines"; exit 1; }
if python3 "$script" no_such_folder >/dev/null 2>&1; then
  echo "FAIL: a missing path was accepted"; exit 1
fi
echo "function-lengths.py: ok"
