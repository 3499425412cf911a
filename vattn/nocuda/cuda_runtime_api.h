// SPDX-License-Identifier: Apache-2.0
// Stand-in for the CUDA runtime header in a build without CUDA (VATTN_CUDA=OFF): the host-only
// code that includes kernels/vattn_abi.h (for its constants: error words, the ABI version) sees
// the one CUDA type the ABI names. Nothing here can be called; no CUDA code is built against it.
#pragma once
#ifndef __CUDA_RUNTIME_API_H__
typedef struct CUstream_st* cudaStream_t;  // as the CUDA runtime declares it (driver_types.h)
#endif
