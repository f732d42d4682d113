# EDO_STATIC_DEPS=ON: executables that run on a machine without our Debian -dev packages (the
# lent GPU machine: CUDA toolkit, CMake and PyTorch, nothing else; scripts/gpu-bundle.sh).
# Every third-party library is linked statically, with libstdc++ and libgcc; what is left is
# glibc (and, for libedo_trace.so, which lives in the traced process, libstdc++, as always).
# scripts/gpu-bundle.sh checks the result with ldd.
if(NOT EDO_STATIC_DEPS)
  return()
endif()

add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libstdc++>
                 $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libgcc>)

# fmt: Debian ships only the shared library; edo_fmt (EdoDependencies.cmake) is then the
# header-only one.
if(NOT TARGET fmt::fmt-header-only)
  message(FATAL_ERROR "EDO_STATIC_DEPS: fmt::fmt-header-only not found (libfmt-dev)")
endif()

# yaml-cpp (the YAML export): the static archive from libyaml-cpp-dev, with the shared target's
# include folder. The shared library needs libstdc++.so.6 and libgcc_s.so.1 at run time.
find_library(EDO_YAML_CPP_STATIC NAMES libyaml-cpp.a REQUIRED)
get_target_property(_edo_yaml_includes yaml-cpp INTERFACE_INCLUDE_DIRECTORIES)
set_target_properties(edo_yaml_cpp PROPERTIES INTERFACE_LINK_LIBRARIES "${EDO_YAML_CPP_STATIC}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${_edo_yaml_includes}")

# SQLite (under SQLiteCpp, itself a static archive in Debian).
find_library(EDO_SQLITE3_STATIC NAMES libsqlite3.a REQUIRED)
if(TARGET SQLiteCpp)
  get_target_property(_edo_sqlitecpp_libs SQLiteCpp INTERFACE_LINK_LIBRARIES)
  list(TRANSFORM _edo_sqlitecpp_libs REPLACE "^(SQLite::SQLite3|sqlite3|.*libsqlite3\\.so.*)$" "${EDO_SQLITE3_STATIC}")
  list(APPEND _edo_sqlitecpp_libs ${CMAKE_DL_LIBS} Threads::Threads m)
  set_target_properties(SQLiteCpp PROPERTIES INTERFACE_LINK_LIBRARIES "${_edo_sqlitecpp_libs}")
endif()

# OpenMP: GCC's libgomp.a instead of libgomp.so.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libgomp.a
                OUTPUT_VARIABLE EDO_GOMP_STATIC OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT EXISTS "${EDO_GOMP_STATIC}")
  message(FATAL_ERROR "EDO_STATIC_DEPS: libgomp.a not found (${EDO_GOMP_STATIC})")
endif()
set_target_properties(OpenMP::OpenMP_CXX PROPERTIES INTERFACE_LINK_LIBRARIES "${EDO_GOMP_STATIC};Threads::Threads")
set_property(TARGET OpenMP::OpenMP_CXX PROPERTY INTERFACE_LINK_OPTIONS "")
message(STATUS "edo: EDO_STATIC_DEPS: static libstdc++/libgcc, fmt header-only, ${EDO_YAML_CPP_STATIC}, ${EDO_SQLITE3_STATIC}, ${EDO_GOMP_STATIC}")
