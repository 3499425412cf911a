# SPDX-License-Identifier: Apache-2.0
# Third-party dependencies, all from Debian packages through find_package. Nothing is downloaded.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
if(VATTN_HAVE_CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()

if(VATTN_PORTABLE)
  # Static HDF5 so the binaries need only libc on the GPU machine (it has no HDF5).
  set(HDF5_USE_STATIC_LIBRARIES ON)
endif()
find_package(HDF5 REQUIRED COMPONENTS C CXX)

add_library(vattn_hdf5 INTERFACE)
target_include_directories(vattn_hdf5 SYSTEM INTERFACE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
target_compile_definitions(vattn_hdf5 INTERFACE ${HDF5_C_DEFINITIONS} ${HDF5_DEFINITIONS})
if(VATTN_PORTABLE)
  # Debian's static libhdf5 lists curl/crypto for its ros3 driver; vattn never opens that
  # driver, so only the filters it uses (deflate, szip) are linked.
  find_library(VATTN_SZ_LIB NAMES libsz.a REQUIRED)
  find_library(VATTN_AEC_LIB NAMES libaec.a REQUIRED)
  find_library(VATTN_Z_LIB NAMES libz.a REQUIRED)
  find_library(VATTN_HDF5_STATIC NAMES libhdf5.a PATHS /usr/lib/x86_64-linux-gnu/hdf5/serial NO_DEFAULT_PATH REQUIRED)
  target_link_libraries(vattn_hdf5 INTERFACE ${VATTN_HDF5_STATIC} ${VATTN_SZ_LIB} ${VATTN_AEC_LIB} ${VATTN_Z_LIB}
                        Threads::Threads ${CMAKE_DL_LIBS} m)
else()
  target_link_libraries(vattn_hdf5 INTERFACE ${HDF5_C_LIBRARIES})
endif()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

# RapidCheck draws the fuzzer's cases (vattn fuzz) as well as the properties' (tests).
find_package(rapidcheck REQUIRED)
# nlohmann-json: the fuzzer's worker protocol, journal, findings and summary.
find_package(nlohmann_json 3 REQUIRED)
# Nettle (Debian's nettle-dev): the SHA-256 a fuzz campaign records of the revision library it
# loads (vattn/fuzz/campaign/kernel_identity.cpp). Its static archive has no dependencies.
find_path(VATTN_NETTLE_INCLUDE nettle/sha2.h REQUIRED)
if(VATTN_PORTABLE)
  find_library(VATTN_NETTLE_LIB NAMES libnettle.a REQUIRED)
else()
  find_library(VATTN_NETTLE_LIB NAMES nettle REQUIRED)
endif()
add_library(vattn_nettle INTERFACE)
target_include_directories(vattn_nettle SYSTEM INTERFACE ${VATTN_NETTLE_INCLUDE})
target_link_libraries(vattn_nettle INTERFACE ${VATTN_NETTLE_LIB})
# CLI11 (Debian's libcli11-dev, header-only): the `vattn` subcommands' option parsing (vattn/cli/args.*).
find_package(CLI11 2 REQUIRED)
if(VATTN_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()

# Links a test or tool executable for the bare GPU machine when VATTN_PORTABLE is on.
# In a VATTN_SANITIZE build it also links the sanitizers' defaults (cmake/sanitizer_defaults.c).
function(vattn_portable_exe target)
  if(VATTN_PORTABLE)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  if(VATTN_SANITIZE)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/sanitizer_defaults.c)
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/cmake/sanitizer_defaults.c TARGET_DIRECTORY ${target} APPEND PROPERTY
                 COMPILE_DEFINITIONS VATTN_ASAN_SUPPRESSIONS="${PROJECT_SOURCE_DIR}/cmake/asan.supp")
  endif()
endfunction()
