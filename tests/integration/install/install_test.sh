#!/usr/bin/env bash
# `cmake --install` to a temporary prefix, then use edo from there as a user would (README.md
# "Install"): build examples/cpp against the installed package with find_package(edo) and, with
# pkg-config, against edo.pc; run `edo record` from the prefix on the job and read the database
# back with the prefix's `edo report --json`; import the Python package from the printed
# PYTHONPATH; check the desktop file names the installed dashboard.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR GENERATOR
set -euo pipefail
src=$1
build=$2
generator=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/edo-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix="$tmp/prefix with space"

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/edo lib/libedo_trace.so include/edo/edo.h lib/cmake/edo/edoConfig.cmake \
         lib/cmake/edo/edoConfigVersion.cmake lib/pkgconfig/edo.pc lib/python/edo/__init__.py \
         lib/python/edo_boot/sitecustomize.py; do
  [[ -f "$prefix/$f" ]] || fail "the install has no $f"
done
# The printed PYTHONPATH is the prefix's lib/python.
pypath=$(sed -n 's/.*export PYTHONPATH=//p' "$tmp/install.log")
[[ $pypath == "$prefix/lib/python" ]] || fail "the install printed PYTHONPATH '$pypath', expected '$prefix/lib/python'"
got=$(cd "$tmp" && PYTHONPATH="$pypath" python3 -c 'import edo, os; print(os.path.realpath(edo.__file__))')
[[ $got == "$(realpath "$prefix")/lib/python/edo/__init__.py" ]] || fail "import edo found '$got', not the installed package"

if [[ -x "$build/bin/edo-dashboard" ]]; then
  [[ -x "$prefix/bin/edo-dashboard" ]] || fail "the install has no bin/edo-dashboard"
  desktop="$prefix/share/applications/edo-dashboard.desktop"
  [[ -f $desktop ]] || fail "the install has no share/applications/edo-dashboard.desktop"
  grep -qx "Exec=\"$prefix/bin/edo-dashboard\" %f" "$desktop" || fail "the desktop file's Exec is not the installed dashboard: $(grep Exec "$desktop")"
  grep -qx "Type=Application" "$desktop" || fail "the desktop file has no Type=Application"
  if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$desktop" || fail "desktop-file-validate"; fi
fi

# Nothing installed may point back into the build tree.
for f in "$prefix/bin/edo" "$prefix/lib/libedo_trace.so"; do
  if ldd "$f" | grep -F "$(realpath "$build")" >/dev/null; then fail "$f loads a library from the build tree: $(ldd "$f")"; fi
done

# The libedo_trace.so a program loads, as a real path ("" when none).
loaded_trace() { local p; p=$(ldd "$1" | sed -n 's/^[[:space:]]*libedo_trace\.so => \(.*\) (0x.*$/\1/p'); [[ -n $p ]] && realpath "$p"; }
installed_trace=$(realpath "$prefix/lib/libedo_trace.so")

# find_package(edo): the example as a project of its own.
cmake -S "$src/examples/cpp" -B "$tmp/example" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER_LAUNCHER= >"$tmp/example.log" 2>&1 || { cat "$tmp/example.log"; fail "configuring examples/cpp with find_package(edo)"; }
cmake --build "$tmp/example" >>"$tmp/example.log" 2>&1 || { cat "$tmp/example.log"; fail "building examples/cpp against the installed edo"; }
job="$tmp/example/edo-embedding-job"
[[ -x $job ]] || fail "no $job after the build"
[[ $(loaded_trace "$job") == "$installed_trace" ]] || fail "the example does not load the installed libedo_trace.so: $(ldd "$job")"

# pkg-config: the C API with one compiler line.
if command -v pkg-config >/dev/null; then
  flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs edo) || fail "pkg-config --cflags --libs edo"
  # shellcheck disable=SC2086  # the flags are words
  eval "c++ -std=c++17 -O1 -o \"$tmp/job-pc\" \"$src/examples/cpp/embedding_job.cpp\" $flags" || fail "compiling with pkg-config's flags: $flags"
  [[ $(loaded_trace "$tmp/job-pc") == "$installed_trace" ]] || fail "the pkg-config build does not load the installed library: $(ldd "$tmp/job-pc")"
  # Run under the prefix's edo record (a sanitizer build's library needs the runtime that
  # edo record preloads first), and its two tables read back.
  (cd "$tmp" && "$prefix/bin/edo" record -o "$tmp/pc.edodb" -- "$tmp/job-pc" 2) >"$tmp/record-pc.log" 2>&1 ||
    { cat "$tmp/record-pc.log"; fail "the pkg-config build does not run under edo record"; }
  "$prefix/bin/edo" report --json "$tmp/pc.edodb" | python3 -c '
import json, sys
t = {x["name"]: x["lookups"] for x in json.load(sys.stdin)["tables"]}
assert t == {"cpp.user": 2 * 4096, "cpp.item": 2 * 4096}, t' || fail "the pkg-config build's recording is not its two tables"
else
  echo "note: no pkg-config on PATH: edo.pc not checked (scripts/install-deps.sh installs it)"
fi

# edo record from the prefix, then the database read back.
(cd "$tmp" && "$prefix/bin/edo" record -o "$tmp/cpp.edodb" -- "$job" 5) >"$tmp/record.log" 2>&1 || { cat "$tmp/record.log"; fail "edo record from the prefix"; }
"$prefix/bin/edo" report --json "$tmp/cpp.edodb" >"$tmp/report.json" || fail "edo report --json from the prefix"
python3 - "$tmp/report.json" <<'PY' || fail "the recording read back is not the job's"
import json, sys
r = json.load(open(sys.argv[1]))
tables = {t["name"]: t for t in r["tables"]}
assert set(tables) == {"cpp.user", "cpp.item"}, sorted(tables)
for name, rows, dim in (("cpp.user", 100000, 32), ("cpp.item", 20000, 64)):
    t = tables[name]
    assert t["rows"] == rows and t["dim"] == dim, t
    assert t["lookups"] == 5 * 4096, (name, t["lookups"])
assert r["job"]["exit_code"] == 0, r["job"]
PY
echo "ok: installed to a prefix; examples/cpp built with find_package(edo) and pkg-config; edo record from the prefix recorded it"
