# CUDA is optional. Found -> kernels/cuda is built (sm_90 unless CMAKE_CUDA_ARCHITECTURES
# says otherwise). Not found -> a CPU-only build. CUPTI capture in libedo_trace.so only needs
# the CUPTI *headers* (the library is dlopen'ed at run time), so it is decided separately.
set(EDO_HAVE_CUDA OFF)
set(EDO_HAVE_CUPTI_HEADERS OFF)

if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
if(NOT EDO_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
endif()

if(CUDAToolkit_FOUND)
  find_path(EDO_CUPTI_INCLUDE_DIR cupti.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/extras/CUPTI/include ${CUDAToolkit_ROOT}/include)
  find_path(EDO_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(EDO_CUPTI_INCLUDE_DIR AND EDO_NVTX_INCLUDE_DIR)
    set(EDO_HAVE_CUPTI_HEADERS ON)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS ${CUDAToolkit_ROOT}/bin/nvcc)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_ROOT}/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # Line tables for the host code, as for C++ (cmake/EdoCompilerFlags.cmake): nvcc's -g is
    # full host debug info, a sixth of a .cu file's compile time; -G (device debug) stays off.
    if(NOT EDO_CUDA_RELWITHDEBINFO_GIVEN AND CMAKE_CUDA_FLAGS_RELWITHDEBINFO STREQUAL "-O2 -g -DNDEBUG")
      set(CMAKE_CUDA_FLAGS_RELWITHDEBINFO "-O2 -Xcompiler=-g1 -DNDEBUG" CACHE STRING
          "Flags used by the CUDA compiler during RelWithDebInfo builds (edo: host line tables only)" FORCE)
    endif()
    # CMake 3.25 does not know nvcc 13's C++20 dialect flag; the .cu sources need C++17 only.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(EDO_HAVE_CUDA ON)
  endif()
endif()

if(NOT EDO_HAVE_CUDA)
  if(EDO_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EDO_CUDA=ON but no CUDA toolkit with nvcc was found; set CUDAToolkit_ROOT or use EDO_CUDA=AUTO")
  endif()
  message(STATUS "edo: CUDA toolkit not found (or EDO_CUDA=OFF): building the CPU-only backend; GPU capture and kernels are left out")
endif()
# NVTX v3 is header-only: the injection code compiles with the headers whether or not
# the rest of CUDA is used.
if(NOT EDO_NVTX_INCLUDE_DIR)
  find_path(EDO_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS /usr/local/cuda/include /usr/include)
endif()
