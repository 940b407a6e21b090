// cuda_check.h: FA4_CUDA_CHECK, the one way the CUDA backend checks a runtime call. A failed
// call throws fa4sim::Error with exit code 3 (kExitNoGpu: no device, or the device failed),
// naming the error, the call and its file:line. Included by gpu_backend.cu (nvcc) and
// attention_host.cpp (the host compiler); needs only the CUDA runtime header and gpu_host.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>

#include "gpu_host.h"

namespace fa4sim::gpu {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* expr, const char* file, int line) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e),
                cudaGetErrorString(e), expr, file, line);
  fail_gpu(buf, "the GPU backend cannot continue; run `nvidia-smi` and 'fa4sim gpu info'");
}

}  // namespace fa4sim::gpu

#define FA4_CUDA_CHECK(expr)                                                                    \
  do {                                                                                          \
    const cudaError_t fa4_err_ = (expr);                                                        \
    if (fa4_err_ != cudaSuccess) ::fa4sim::gpu::cuda_fail(fa4_err_, #expr, __FILE__, __LINE__); \
  } while (0)
