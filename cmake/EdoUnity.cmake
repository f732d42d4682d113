# Unity builds of the product (EDO_UNITY_BUILD, on by default): each library's and program's C++
# sources are compiled in batches of EDO_UNITY_BATCH files, so that the headers every file
# includes (CLI11, nlohmann-json, Qt, Eigen) are parsed and instantiated once a batch. A cold
# `make demo` build took 466 s of CPU file by file and 206 s in batches of 16 (2 cores; see
# docs/development.md). The tests, benchmarks and examples stay file by file.
#
# What a batch changes: the file-local helpers (anonymous namespace, static) of all its files
# share one scope. Two files' helpers of one name would be a redefinition error at best, and
# at worst an overload that silently calls the other file's helper. The test
# unity_file_local_names (tests/integration/unity) reads the manifest written here and fails
# when one target's files define a file-local function name twice.
option(EDO_UNITY_BUILD "Compile each product library's sources in batches of EDO_UNITY_BATCH (a CMake unity build)" ON)
set(EDO_UNITY_BATCH 16 CACHE STRING "Sources per unity batch (EDO_UNITY_BUILD)")

# From here to edo_end_unity_build(): targets made are unity builds (when EDO_UNITY_BUILD).
macro(edo_begin_unity_build)
  if(EDO_UNITY_BUILD)
    set(CMAKE_UNITY_BUILD ON)
    set(CMAKE_UNITY_BUILD_BATCH_SIZE ${EDO_UNITY_BATCH})
  endif()
endmacro()

# Ends the unity section and writes <build>/unity-targets.txt: one line per unity-built target,
# "target<TAB>source;source;...", the C++ sources that may share a batch.
macro(edo_end_unity_build)
  set(CMAKE_UNITY_BUILD OFF)
  _edo_targets_below(${PROJECT_SOURCE_DIR} _edo_unity_all)
  set(_edo_unity_manifest "")
  foreach(_t IN LISTS _edo_unity_all)
    get_target_property(_unity ${_t} UNITY_BUILD)
    get_target_property(_type ${_t} TYPE)
    if(NOT _unity OR _type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    _edo_target_sources(${_t} _srcs)
    list(FILTER _srcs INCLUDE REGEX "\\.(c|cc|cpp|cxx)$")
    list(LENGTH _srcs _n)
    if(_n GREATER 1)
      string(APPEND _edo_unity_manifest "${_t}\t${_srcs}\n")
    endif()
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/unity-targets.txt "${_edo_unity_manifest}")
endmacro()
