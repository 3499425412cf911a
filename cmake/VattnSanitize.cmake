# SPDX-License-Identifier: Apache-2.0
# VATTN_SANITIZE (e.g. "address,undefined"): -fsanitize=... -fno-omit-frame-pointer on the C/C++
# compile and host link lines of every target from here on. CUDA device code (nvcc) is left alone.
# The executables carry the sanitizers' default options (cmake/sanitizer_defaults.c, linked by
# vattn_portable_exe); ASAN_OPTIONS / UBSAN_OPTIONS override them.
if(VATTN_SANITIZE)
  string(REPLACE ";" "," _vattn_san "${VATTN_SANITIZE}")
  string(REPLACE "," "$<COMMA>" _vattn_san_genex "${_vattn_san}")  # a bare ',' would split the genex
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${_vattn_san_genex}> $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options($<HOST_LINK:-fsanitize=${_vattn_san_genex}>)
  if(_vattn_san MATCHES "undefined")
    # A UB report fails the run (by default UBSan prints and carries on).
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>)
  endif()
  message(STATUS "vattn: host sanitizers: ${_vattn_san}")
endif()
