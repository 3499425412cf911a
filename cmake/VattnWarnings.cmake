# SPDX-License-Identifier: Apache-2.0
# Warnings for the project's own code (third-party headers come in as SYSTEM).
# VATTN_WERROR (CI turns it on): every warning of the project's own code fails the build. Kept to
# the build tree ($<BUILD_INTERFACE:...>) so an installed vattn never hands -Werror to consumers.
option(VATTN_WERROR "Treat compiler warnings in vattn's own code as errors (CI)" OFF)
add_library(vattn_warnings INTERFACE)
target_compile_options(vattn_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=cross-execution-space-call -Wno-deprecated-gpu-targets>)
if(VATTN_WERROR)
  target_compile_options(vattn_warnings INTERFACE
    $<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:C,CXX>:-Werror>>
    $<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>>)
  # GCC's -Wmaybe-uninitialized gives false positives inside libstdc++'s own headers (<regex>)
  # once -fsanitize instruments the code (GCC documents that sanitizers can cause spurious
  # warnings): under VATTN_SANITIZE it stays a warning, never an error.
  if(VATTN_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(vattn_warnings INTERFACE
      $<BUILD_INTERFACE:$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-error=maybe-uninitialized>>)
  endif()
  message(STATUS "vattn: VATTN_WERROR on: warnings are errors")
endif()
