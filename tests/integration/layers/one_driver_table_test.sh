#!/bin/sh
# Issue 21 §6: the tracer has one CUDA driver table (profiler/capture/src/driver/cuda_driver.h): only
# cuda_driver.cpp dlopens libcuda. A second table (weights_cuda.cpp had its own) is a second set
# of symbol versions and of fork-time state to keep in step.
# usage: one_driver_table_test.sh SOURCE_DIR
src="$1/profiler/capture/src"
[ -d "$src" ] || { echo "one_driver_table_test: no $src (pass the source directory)"; exit 2; }
others=$(grep -lE '^[^/]*dlopen\("libcuda' -r --include="*.cpp" --include="*.h" "$src" 2>/dev/null | grep -v '/cuda_driver\.cpp$')
if [ -n "$others" ]; then
  echo "libcuda is dlopen'ed outside cuda_driver.cpp (use load_driver() from cuda_driver.h): $others"
  exit 1
fi
grep -q 'dlopen("libcuda.so.1"' "$src/driver/cuda_driver.cpp" || { echo "cuda_driver.cpp no longer loads libcuda.so.1"; exit 1; }
echo "one driver table: cuda_driver.cpp"
