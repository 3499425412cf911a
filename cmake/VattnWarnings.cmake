# SPDX-License-Identifier: Apache-2.0
# Warnings for the project's own code (third-party headers come in as SYSTEM).
add_library(vattn_warnings INTERFACE)
target_compile_options(vattn_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=cross-execution-space-call -Wno-deprecated-gpu-targets>)
