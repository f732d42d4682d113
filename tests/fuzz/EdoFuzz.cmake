# edo_add_fuzz_target(NAME <name> SOURCES <files> LIBS <targets>)
#
# In the project's normal build: <name>_replay (the sources + common/replay_main.cpp) and the
# tests fuzz_replay_<name> and fuzz_<name>. In the clang sub-build (EDO_FUZZ=ON, configured by
# edo_fuzz_finish() below): the libFuzzer binary fuzz_<name>. The corpus lives in
# tests/fuzz/corpus/<name>/, an optional libFuzzer dictionary in tests/fuzz/corpus/<name>.dict.
set(EDO_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(EDO_FUZZ_SECONDS 10 CACHE STRING "Seconds each libFuzzer target runs in the test suite")
set(EDO_FUZZ_CLANG AUTO CACHE STRING "Build the libFuzzer targets with clang (in <build>/fuzz-clang): AUTO, ON or OFF")
set_property(CACHE EDO_FUZZ_CLANG PROPERTY STRINGS AUTO ON OFF)
set(EDO_FUZZ_BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz-clang)

# Can clang build a libFuzzer binary with the sanitizers and OpenMP the project needs?
# Sets EDO_FUZZ_CLANG_OK and, when not, EDO_FUZZ_SKIP_REASON.
function(_edo_fuzz_probe)
  set(ok OFF)
  set(reason "")
  if(EDO_FUZZ_CLANG STREQUAL "OFF")
    set(reason "EDO_FUZZ_CLANG=OFF")
  else()
    find_program(EDO_FUZZ_CLANGXX NAMES clang++ clang++-16 clang++-15 clang++-14)
    find_program(EDO_FUZZ_CLANGC NAMES clang clang-16 clang-15 clang-14)
    if(NOT EDO_FUZZ_CLANGXX OR NOT EDO_FUZZ_CLANGC)
      set(reason "clang/clang++ not found (scripts/install-deps.sh installs clang and libclang-rt-14-dev)")
    else()
      set(probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/edo-fuzz-probe)
      file(MAKE_DIRECTORY ${probe_dir})
      file(WRITE ${probe_dir}/probe.cpp
           "#include <cstddef>\n#include <cstdint>\n#include <omp.h>\n"
           "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) { return n > 0 && d[0] == omp_get_max_threads() ? 0 : 0; }\n")
      execute_process(COMMAND ${EDO_FUZZ_CLANGXX} -fsanitize=fuzzer,address,undefined -fopenmp
                              ${probe_dir}/probe.cpp -o ${probe_dir}/probe
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(rc EQUAL 0)
        set(ok ON)
      else()
        string(REGEX REPLACE "\n.*" "" first_line "${out}")
        set(reason "${EDO_FUZZ_CLANGXX} cannot link -fsanitize=fuzzer,address,undefined -fopenmp (${first_line}; install libclang-rt-14-dev and libomp-dev)")
      endif()
    endif()
  endif()
  if(EDO_FUZZ_CLANG STREQUAL "ON" AND NOT ok)
    message(FATAL_ERROR "EDO_FUZZ_CLANG=ON but ${reason}")
  endif()
  set(EDO_FUZZ_CLANG_OK ${ok} PARENT_SCOPE)
  set(EDO_FUZZ_SKIP_REASON "${reason}" PARENT_SCOPE)
endfunction()

if(EDO_FUZZ)
  add_custom_target(edo_fuzzers)
else()
  _edo_fuzz_probe()
  if(EDO_FUZZ_CLANG_OK)
    message(STATUS "edo: libFuzzer targets built with ${EDO_FUZZ_CLANGXX} in ${EDO_FUZZ_BINARY_DIR} (${EDO_FUZZ_SECONDS} s each in the tests)")
  else()
    message(STATUS "edo: libFuzzer targets not built: ${EDO_FUZZ_SKIP_REASON}")
  endif()
  set_property(GLOBAL PROPERTY EDO_FUZZ_TARGETS "")
endif()

function(edo_add_fuzz_target)
  cmake_parse_arguments(F "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(NOT F_NAME OR NOT F_SOURCES)
    message(FATAL_ERROR "edo_add_fuzz_target: NAME and SOURCES are required")
  endif()
  set(corpus ${EDO_FUZZ_DIR}/corpus/${F_NAME})
  if(NOT IS_DIRECTORY ${corpus})
    message(FATAL_ERROR "edo_add_fuzz_target(${F_NAME}): no seed corpus at ${corpus}")
  endif()
  if(EDO_FUZZ)
    # clang sub-build: everything is compiled with -fsanitize=fuzzer-no-link (EdoCompilerFlags)
    add_executable(fuzz_${F_NAME} ${F_SOURCES})
    target_link_libraries(fuzz_${F_NAME} PRIVATE ${F_LIBS} edo_warnings)
    target_link_options(fuzz_${F_NAME} PRIVATE -fsanitize=fuzzer)
    add_dependencies(edo_fuzzers fuzz_${F_NAME})
    return()
  endif()

  add_executable(${F_NAME}_replay ${F_SOURCES} ${EDO_FUZZ_DIR}/common/replay_main.cpp)
  target_link_libraries(${F_NAME}_replay PRIVATE ${F_LIBS} edo_warnings)
  add_test(NAME fuzz_replay_${F_NAME} COMMAND ${F_NAME}_replay --name ${F_NAME} --mutate-seconds 2 ${corpus})
  set_tests_properties(fuzz_replay_${F_NAME} PROPERTIES TIMEOUT 120 LABELS fuzz)

  if(EDO_FUZZ_CLANG_OK)
    add_test(NAME fuzz_${F_NAME}
             COMMAND ${EDO_FUZZ_DIR}/run-fuzzer.sh ${EDO_FUZZ_BINARY_DIR}/bin/fuzz_${F_NAME} ${F_NAME}
                     ${EDO_FUZZ_SECONDS} ${corpus} ${CMAKE_BINARY_DIR}/fuzz-results)
    math(EXPR timeout "${EDO_FUZZ_SECONDS} * 2 + 60")
    set_tests_properties(fuzz_${F_NAME} PROPERTIES TIMEOUT ${timeout} LABELS fuzz)
  else()
    add_test(NAME fuzz_${F_NAME} COMMAND sh -c "echo \"fuzz_${F_NAME}: skipped: $0\"; exit 77" "${EDO_FUZZ_SKIP_REASON}")
    set_tests_properties(fuzz_${F_NAME} PROPERTIES SKIP_RETURN_CODE 77 LABELS fuzz)
  endif()
endfunction()

# After every target is declared: in the normal build, the clang sub-build that builds the
# libFuzzer binaries (part of `all`, so `make test` has them).
function(edo_fuzz_finish)
  if(EDO_FUZZ OR NOT EDO_FUZZ_CLANG_OK)
    return()
  endif()
  include(ExternalProject)
  ExternalProject_Add(edo_fuzzers_clang
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${EDO_FUZZ_BINARY_DIR}
    CMAKE_ARGS -DCMAKE_C_COMPILER=${EDO_FUZZ_CLANGC} -DCMAKE_CXX_COMPILER=${EDO_FUZZ_CLANGXX}
               -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDO_FUZZ=ON -DEDO_SANITIZE=address,undefined
               -DEDO_BUILD_TESTS=OFF -DEDO_BUILD_BENCH=OFF -DEDO_GUI=OFF -DEDO_CUDA=OFF
    BUILD_COMMAND ${EDO_FUZZ_DIR}/build-fuzzers.sh ${EDO_FUZZ_BINARY_DIR}
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    LOG_CONFIGURE ON LOG_OUTPUT_ON_FAILURE ON)
endfunction()
