# What `cmake --install <build> --prefix P` puts in P besides the targets' own install() rules
# (bin/edo, bin/edo-dashboard, lib/libedo_trace.so, lib/python/{edo,edo_boot}):
#   include/edo/edo.h                        the C API
#   lib/cmake/edo/edoConfig*.cmake           find_package(edo) -> edo::trace
#   lib/pkgconfig/edo.pc                     pkg-config --cflags --libs edo
#   share/applications/edo-dashboard.desktop the dashboard in a desktop's menus (when built)
# and the install prints the PYTHONPATH that makes `import edo` work. README.md "Install".
include(CMakePackageConfigHelpers)

# In the build tree the same name the installed package gives (examples/cpp links edo::trace).
add_library(edo::trace ALIAS edo_trace)

install(FILES ${PROJECT_SOURCE_DIR}/profiler/include/edo/edo.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/edo)

set(_edo_cfg ${CMAKE_BINARY_DIR}/install-config)
configure_file(${CMAKE_CURRENT_LIST_DIR}/install/edoConfig.cmake.in ${_edo_cfg}/edoConfig.cmake @ONLY)
write_basic_package_version_file(${_edo_cfg}/edoConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${_edo_cfg}/edoConfig.cmake ${_edo_cfg}/edoConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/edo)
configure_file(${CMAKE_CURRENT_LIST_DIR}/install/edo.pc.in ${_edo_cfg}/edo.pc @ONLY)
install(FILES ${_edo_cfg}/edo.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The desktop file names the installed dashboard by its absolute path, known only at install
# time (--prefix may differ from the configured prefix): written by the install step itself.
if(TARGET edo-dashboard)
  install(CODE "
    set(_edo_bin \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/edo-dashboard\")
    file(READ \"${CMAKE_CURRENT_LIST_DIR}/install/edo-dashboard.desktop.in\" _edo_desktop)
    string(REPLACE \"@EDO_DASHBOARD_EXEC@\" \"\\\"\${_edo_bin}\\\"\" _edo_desktop \"\${_edo_desktop}\")
    set(_edo_out \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/applications/edo-dashboard.desktop\")
    message(STATUS \"Installing: \${_edo_out}\")
    file(WRITE \"\${_edo_out}\" \"\${_edo_desktop}\")")
endif()

install(CODE "
  message(STATUS \"edo: installed in \${CMAKE_INSTALL_PREFIX}. For the Python package (import edo, edo.apply_plan): export PYTHONPATH=\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/python\")")
