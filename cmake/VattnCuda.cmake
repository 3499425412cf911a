# SPDX-License-Identifier: Apache-2.0
# VATTN_CUDA (AUTO, ON, OFF) -> VATTN_HAVE_CUDA. AUTO: on when check_language(CUDA) finds a CUDA
# compiler; ON: required; OFF: no CUDA at all (no enable_language, no CUDA toolkit lookup), and
# kernels/, the GPU oracle, vattn/gpu/, the fuzzer's GPU target, tests/gpu and tests/audit are left out.
string(TOUPPER "${VATTN_CUDA}" _vattn_cuda)
if(_vattn_cuda STREQUAL "AUTO")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(VATTN_HAVE_CUDA ON)
  else()
    set(VATTN_HAVE_CUDA OFF)
  endif()
elseif(_vattn_cuda)  # ON, TRUE, 1, YES ...
  set(VATTN_HAVE_CUDA ON)
else()
  set(VATTN_HAVE_CUDA OFF)
endif()

if(NOT VATTN_HAVE_CUDA)
  message(STATUS "vattn: CUDA off: kernels, the GPU oracle, GPU tests and bench/graph-check are not built")
  return()
endif()

enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
message(STATUS "vattn: CUDA on (${CMAKE_CUDA_COMPILER})")

# CUDA targets: the kernel uses sm_80-class instructions only (mma.sync, ldmatrix, cp.async),
# so one source builds for the RTX PRO 6000 (sm_120a) and for the H200 used for tests (sm_90a),
# plus compute_90a PTX. CMake's architecture list is bypassed to spell the 'a' targets exactly.
set(CMAKE_CUDA_ARCHITECTURES OFF)
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
set(VATTN_CUDA_GENCODE
  "-gencode=arch=compute_120a,code=sm_120a"
  "-gencode=arch=compute_90a,code=sm_90a"
  "-gencode=arch=compute_90a,code=compute_90a")

function(vattn_cuda_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${VATTN_CUDA_GENCODE} -lineinfo --expt-relaxed-constexpr>)
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF POSITION_INDEPENDENT_CODE ON)
  target_link_options(${target} PRIVATE $<DEVICE_LINK:${VATTN_CUDA_GENCODE}>)
endfunction()
