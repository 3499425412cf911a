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
