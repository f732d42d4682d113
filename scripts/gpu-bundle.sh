#!/usr/bin/env bash
# Builds, on this CPU-only machine, everything scripts/gpu-check.sh runs on a lent GPU machine,
# so that the machine's scarce minutes go to running, not building. That machine has the CUDA
# toolkit, CMake and PyTorch but none of our Debian -dev packages, and nothing can be installed
# there: the bundle is linked with EDO_STATIC_DEPS=ON (third-party libraries, libstdc++ and
# libgcc static), built for sm_90, stripped, and checked with ldd.
#
#   scripts/gpu-bundle.sh   # -> build-gpu/bin, build-gpu/lib/libedo_trace.so, build-gpu/lib/python
#
# Then, with the device tool: run `scripts/gpu-check.sh` with carry ["build-gpu/bin",
# "build-gpu/lib/libedo_trace.so", "build-gpu/lib/python"]. gpu-check.sh and every gpu-steps.sh use prebuilt binaries when
# $EDO_BUILD has no CMakeCache.txt (the cache is not carried), and build them otherwise.
# Exit status: 0 bundle ready, 1 build failed, a binary needs a library the GPU machine lacks,
# or the bundle is over the 64 MiB carry limit.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EDO_BUILD:-build-gpu}
arch=${ARCH:-90}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "gpu-bundle: no nvcc (the CUDA toolkit under /usr/local/cuda is needed to build the GPU code)" >&2
  exit 1
fi
export PATH=$PATH:/usr/local/cuda/bin

mkdir -p "$build"
echo "gpu-bundle: configure $build (Release, sm_$arch, static dependencies)"
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DEDO_CUDA=ON -DEDO_GUI=OFF -DEDO_STATIC_DEPS=ON >"$build/gpu-bundle.configure.log" 2>&1 ||
  { echo "gpu-bundle: configure failed, see $build/gpu-bundle.configure.log" >&2; exit 1; }

targets=(edo edo_trace edo_python tracer_gpu_job tracer_gpu_tests cupti_holder_job launch_paths_probe bench_device_counting
         edo_kernels_gpu_tests bench_kernels bench_trace_overhead bench_tune devmodel_check)
echo "gpu-bundle: build ${targets[*]} (the CUDA kernels take a few minutes)"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build/gpu-bundle.build.log" 2>&1 ||
  { echo "gpu-bundle: build failed, see $build/gpu-bundle.build.log" >&2; exit 1; }

bins=("$build"/bin/edo "$build"/bin/tracer_gpu_job "$build"/bin/tracer_gpu_tests "$build"/bin/cupti_holder_job
      "$build"/bin/launch_paths_probe
      "$build"/bin/bench_device_counting "$build"/bin/edo_kernels_gpu_tests
      "$build"/bin/bench_kernels "$build"/bin/bench_trace_overhead "$build"/bin/bench_tune "$build"/bin/devmodel_check "$build"/lib/libedo_trace.so)
strip --strip-unneeded "${bins[@]}"

# What the GPU machine is known to have: glibc, the dynamic loader, and the NVIDIA driver's
# libcuda (loaded with dlopen by our code, never linked). libstdc++ only for the preload library.
status=0
for f in "${bins[@]}"; do
  allowed='linux-vdso|ld-linux-x86-64|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so'
  [[ $f == *libedo_trace.so ]] && allowed="$allowed|libstdc\\+\\+|libgcc_s"
  # the CUDA job links the runtime shared (as PyTorch does) and our
  # library; the GPU machine has the CUDA 13 toolkit
  [[ $f == */tracer_gpu_job || $f == */bench_device_counting ]] && allowed="$allowed|libcudart\\.so|libedo_trace\\.so|libstdc\\+\\+|libgcc_s"
  # the probe of runtime launch paths: a CUPTI client with the shared runtime (libcupti.so.13
  # itself needs glibc's libutil.so.1)
  [[ $f == */launch_paths_probe ]] && allowed="$allowed|libcupti\\.so|libutil\\.so|libcudart\\.so|libstdc\\+\\+|libgcc_s"
  # a job that is a CUPTI client itself: the toolkit's libcupti (static runtime)
  [[ $f == */cupti_holder_job ]] && allowed="$allowed|libcupti\\.so|libutil\\.so|libedo_trace\\.so|libstdc\\+\\+|libgcc_s"
  # the overhead benchmark calls the C API of our library (which brings libstdc++)
  [[ $f == */bench_trace_overhead ]] && allowed="$allowed|libedo_trace\\.so|libstdc\\+\\+|libgcc_s"
  extra=$(ldd "$f" | awk '{print $1}' | grep -Ev "^(.*/)?($allowed)" || true)
  if ldd "$f" | grep -q "not found"; then
    echo "gpu-bundle: $f: $(ldd "$f" | grep "not found" | head -n1)" >&2
    status=1
  fi
  if [[ -n $extra ]]; then
    echo "gpu-bundle: $f needs libraries the GPU machine may not have: $(echo $extra)" >&2
    status=1
  fi
done
# newest glibc symbol version the bundle needs (the GPU machine's glibc must be at least this)
glibc=$(objdump -T "${bins[@]}" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n -u | tail -n1)
carry=("$build/bin" "$build/lib/libedo_trace.so" "$build/lib/python")
size_kib=$(du -sck "${carry[@]}" | awk '/total$/ {print $1}')
echo "gpu-bundle: ${carry[*]}: $((size_kib / 1024)) MiB (carry limit 64 MiB), needs glibc >= ${glibc#GLIBC_}"
if (( size_kib > 60 * 1024 )); then
  echo "gpu-bundle: the bundle is over 60 MiB; the device tool carries at most 64 MiB" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "gpu-bundle: ready; device tool: command 'scripts/gpu-check.sh', carry [\"${carry[0]}\", \"${carry[1]}\", \"${carry[2]}\"]"
exit $status
