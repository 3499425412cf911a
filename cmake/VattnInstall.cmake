# SPDX-License-Identifier: Apache-2.0
# Install rules: the `vattn` command and the exported CMake package `vattn` (host libraries only,
# never CUDA), with a pkg-config file beside it:
#   find_package(vattn REQUIRED)
#   target_link_libraries(app PRIVATE vattn::casefile vattn::gen vattn::oracle vattn::check)
#   c++ -std=c++17 app.cpp $(pkg-config --cflags --libs vattn)
# Installs the command to <prefix>/bin (its fuzz workers are the same binary: `vattn fuzz-worker`),
# the morning report's generator to <prefix>/share/vattn, static libraries to <prefix>/lib, the
# headers of each installed library under <prefix>/include/vattn/<its folder>/ (the path they have
# in the source tree, so consumers and the suite include them the same way:
# <vattn/casefile/case_file.h>), the package to <prefix>/lib/cmake/vattn/ and vattn.pc to
# <prefix>/lib/pkgconfig/. Nothing installed names the source or the build tree.
# Included last from the top-level CMakeLists.txt, so every target exists; a target a
# configuration does not build (e.g. a CPU-only one) is skipped with if(TARGET).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VATTN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/vattn CACHE STRING
    "Where the vattn CMake package goes, relative to the install prefix")
mark_as_advanced(VATTN_INSTALL_CMAKEDIR)

# Wraps every plain entry of a target's usage property in $<BUILD_INTERFACE:...> (entries that
# are already generator expressions are left as they are) and appends the install-side entries.
function(_vattn_split_interface target property)
  get_target_property(_old ${target} ${property})
  set(_new "")
  if(_old)
    foreach(_item IN LISTS _old)
      if(_item MATCHES "^\\$<")
        list(APPEND _new "${_item}")
      else()
        list(APPEND _new "$<BUILD_INTERFACE:${_item}>")
      endif()
    endforeach()
  endif()
  foreach(_item IN LISTS ARGN)
    list(APPEND _new "$<INSTALL_INTERFACE:${_item}>")
  endforeach()
  set_property(TARGET ${target} PROPERTY ${property} "${_new}")
endfunction()

# target -> export name (vattn::<name>) and header folder. Order: dependencies first.
set(_vattn_install_libs
  vattn_case:case
  vattn_recipe:recipe
  vattn_gen:gen
  vattn_oracle:oracle
  vattn_casefile:casefile
  vattn_check:check)

# vattn_include_root carries the one include root: <prefix>/include once installed.
_vattn_split_interface(vattn_include_root INTERFACE_INCLUDE_DIRECTORIES ${CMAKE_INSTALL_INCLUDEDIR})
set_property(TARGET vattn_include_root PROPERTY EXPORT_NAME include_root)
set(_vattn_export_targets vattn_include_root)
foreach(_entry IN LISTS _vattn_install_libs)
  string(REPLACE ":" ";" _entry "${_entry}")
  list(GET _entry 0 _target)
  list(GET _entry 1 _name)
  set(_dir ${PROJECT_SOURCE_DIR}/vattn/${_name})
  if(NOT TARGET ${_target})
    continue()
  endif()
  set_property(TARGET ${_target} PROPERTY EXPORT_NAME ${_name})
  list(APPEND _vattn_export_targets ${_target})
  if(_name STREQUAL "oracle")
    file(GLOB _h CONFIGURE_DEPENDS ${_dir}/cpu_*.h)  # not gpu_naive_oracle.h (CUDA)
  else()
    file(GLOB _h CONFIGURE_DEPENDS ${_dir}/*.h)
  endif()
  install(FILES ${_h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/vattn/${_name})
endforeach()

# vattn_warnings: PRIVATE to the static libraries, so it appears in their exported link
# interface as $<LINK_ONLY:...> (nothing reaches consumers' compile lines); it must be exported.
if(TARGET vattn_warnings)
  set_property(TARGET vattn_warnings PROPERTY EXPORT_NAME warnings)
  list(APPEND _vattn_export_targets vattn_warnings)
endif()

# vattn_hdf5: in the build it carries HDF5's include dirs and libraries as found here; installed,
# it links HDF5::HDF5, which the package's config file re-creates with find_dependency(HDF5), so
# nothing of this machine is baked in. VATTN_PORTABLE builds link Debian's static libhdf5.a and
# its filters by (system) path: those absolute paths are exported as they are.
if(TARGET vattn_hdf5)
  set_property(TARGET vattn_hdf5 PROPERTY EXPORT_NAME hdf5)
  if(NOT VATTN_PORTABLE)
    _vattn_split_interface(vattn_hdf5 INTERFACE_INCLUDE_DIRECTORIES)
    _vattn_split_interface(vattn_hdf5 INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
    _vattn_split_interface(vattn_hdf5 INTERFACE_COMPILE_DEFINITIONS)
    _vattn_split_interface(vattn_hdf5 INTERFACE_LINK_LIBRARIES HDF5::HDF5)
  endif()
  list(APPEND _vattn_export_targets vattn_hdf5)
endif()

install(TARGETS ${_vattn_export_targets}
        EXPORT vattnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS vattn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `vattn report` looks for the morning report generator at <bin>/../share/vattn first.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/vattn/fuzz/report/morning_report.py DESTINATION ${CMAKE_INSTALL_DATADIR}/vattn)
install(EXPORT vattnTargets NAMESPACE vattn:: FILE vattnTargets.cmake DESTINATION ${VATTN_INSTALL_CMAKEDIR})

set(VATTN_CONFIG_PORTABLE ${VATTN_PORTABLE})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/vattnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/vattnConfig.cmake
                              INSTALL_DESTINATION ${VATTN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vattnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vattnConfig.cmake ${PROJECT_BINARY_DIR}/vattnConfigVersion.cmake
        DESTINATION ${VATTN_INSTALL_CMAKEDIR})

# vattn.pc: the same libraries for builds without CMake. Its prefix is found from where the file
# lies (${pcfiledir}), so the installed tree can move; link order: users before what they use.
set(VATTN_PC_LIBS "")
foreach(_entry IN LISTS _vattn_install_libs)
  string(REPLACE ":" ";" _entry "${_entry}")
  list(GET _entry 0 _target)
  if(TARGET ${_target})
    string(PREPEND VATTN_PC_LIBS "-l${_target} ")
  endif()
endforeach()
string(STRIP "${VATTN_PC_LIBS}" VATTN_PC_LIBS)
file(RELATIVE_PATH VATTN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" VATTN_PC_TO_PREFIX "${VATTN_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/vattn.pc.in ${PROJECT_BINARY_DIR}/vattn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vattn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

unset(_vattn_install_libs)
unset(_vattn_export_targets)
