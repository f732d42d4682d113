# Warnings and sanitizers shared by every target of the project.
add_library(edo_warnings INTERFACE)
target_compile_options(edo_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)

if(EDO_SANITIZE)
  string(REPLACE "," ";" _edo_san_list "${EDO_SANITIZE}")
  foreach(_san IN LISTS _edo_san_list)
    if(NOT _san MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "EDO_SANITIZE: unknown sanitizer '${_san}' (use address, undefined, thread or leak)")
    endif()
  endforeach()
  set(_edo_san_flags "-fsanitize=${EDO_SANITIZE}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST _edo_san_list)
    list(APPEND _edo_san_flags -fno-sanitize-recover=undefined)
  endif()
  # Host code only (nvcc does not take these flags); one generator expression per flag, with
  # commas escaped, because a list inside $<...> would be split.
  foreach(_flag IN LISTS _edo_san_flags)
    string(REPLACE "," "$<COMMA>" _flag_escaped "${_flag}")
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:${_flag_escaped}>)
  endforeach()
  add_link_options(${_edo_san_flags})
  # libedo_trace.so is injected into jobs that are not built with sanitizers; an instrumented
  # copy needs the sanitizer runtime loaded first. `edo record` and the tests put this list in
  # front of LD_PRELOAD (EDO_SANITIZER_PRELOAD; empty in normal builds).
  set(_edo_san_runtime "")
  foreach(_rt IN ITEMS asan ubsan tsan)
    if((_rt STREQUAL "asan" AND "address" IN_LIST _edo_san_list) OR
       (_rt STREQUAL "ubsan" AND "undefined" IN_LIST _edo_san_list AND NOT "address" IN_LIST _edo_san_list) OR
       (_rt STREQUAL "tsan" AND "thread" IN_LIST _edo_san_list))
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_rt}.so
                      OUTPUT_VARIABLE _rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
      get_filename_component(_rt_path "${_rt_path}" REALPATH)
      list(APPEND _edo_san_runtime "${_rt_path}")
    endif()
  endforeach()
  string(REPLACE ";" ":" _edo_san_runtime "${_edo_san_runtime}")
  set(EDO_SANITIZER_RUNTIME "${_edo_san_runtime}")  # for the tests' environment (EdoSanitizerTestEnv)
  add_compile_definitions(EDO_SANITIZER_PRELOAD="${_edo_san_runtime}")
  message(STATUS "edo: sanitizer runtime preloaded into traced jobs: ${_edo_san_runtime}")
endif()

# The clang sub-build of the fuzz targets (tests/fuzz/EdoFuzz.cmake): coverage feedback for
# libFuzzer in every library the targets link.
if(EDO_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "EDO_FUZZ=ON needs clang (CMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()

# Debug information as line tables (-g1) in the default RelWithDebInfo build: backtraces,
# debuggers' stepping and sanitizer reports still name file and line, and a cold build is a
# third cheaper in CPU time than with full -g (measured on cli/cmd_report.cpp, whose CLI11 and
# nlohmann-json instantiations dominate: 13.2 s with -g, 9.4 s without). Flags given with -D,
# or kept in the cache from an earlier configure, are left as they are.
foreach(_lang C CXX)
  if(NOT EDO_${_lang}_RELWITHDEBINFO_GIVEN AND CMAKE_${_lang}_COMPILER_ID MATCHES "GNU|Clang" AND
     CMAKE_${_lang}_FLAGS_RELWITHDEBINFO STREQUAL "-O2 -g -DNDEBUG")
    set(CMAKE_${_lang}_FLAGS_RELWITHDEBINFO "-O2 -g1 -DNDEBUG" CACHE STRING
        "Flags used by the ${_lang} compiler during RelWithDebInfo builds (edo: line tables only)" FORCE)
  endif()
endforeach()

# Code that runs once per command (option parsing, formatting a report) is compiled with -O1:
# the optimiser's time on CLI11's header-only templates is most of a cold `make demo` build, and
# nothing there is a hot loop (the statistics, tuner and kernels keep their own -O2/-O3).
function(edo_cold_code target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release)$")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
  endif()
endfunction()
