# Sourced by the gpu-steps.sh scripts. edo_ensure_built BUILD LOG TARGET...
#   BUILD has a CMakeCache.txt     -> cmake --build the targets there (incremental)
#   no cache, every target present -> a bundle from scripts/gpu-bundle.sh: use it as it is
#   otherwise                      -> configure (Release, sm_$ARCH, CUDA on) and build
# Build output goes to LOG. Returns non-zero, with one line on stderr, when the build fails.
edo_ensure_built() {
  local build=$1 log=$2 t missing=()
  shift 2
  if [[ ! -f $build/CMakeCache.txt ]]; then
    for t in "$@"; do
      [[ -e $build/bin/$t || -e $build/lib/lib$t.so || ($t == edo_python && -d $build/lib/python/edo) ]] || missing+=("$t")
    done
    if ((${#missing[@]} == 0)); then
      echo "using the prebuilt bundle in $build (scripts/gpu-bundle.sh)" >&2
      return 0
    fi
    echo "configure $build (missing: ${missing[*]})" >&2
    local gen=()
    command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
    cmake -S "${EDO_ROOT:-.}" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" \
      -DEDO_CUDA=ON -DEDO_GUI=OFF >"$log" 2>&1 ||
      { echo "configure failed (see $log); on a machine without edo's Debian packages, carry a bundle from scripts/gpu-bundle.sh" >&2; return 1; }
  fi
  cmake --build "$build" -j "$(nproc)" --target "$@" >>"$log" 2>&1 || { echo "build failed (see $log)" >&2; return 1; }
}
