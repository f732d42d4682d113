# `make demo` builds only what scripts/demo.sh runs: cmake --build <build> --target demo_targets
# (the edo command, libedo_trace.so, the Python package, the C++ example and, with Qt 6, the
# dashboard). `make test` builds everything else: tests, benchmarks, the clang fuzz sub-build.
add_custom_target(demo_targets)
add_dependencies(demo_targets edo edo_trace edo_python edo-embedding-job)
if(TARGET edo-dashboard)
  add_dependencies(demo_targets edo-dashboard)
endif()
