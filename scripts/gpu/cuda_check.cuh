// scripts/gpu/cuda_check.cuh: CK(call), the standalone GPU probes' check of a CUDA runtime call:
// on an error it prints the call and the error string and exits 1. Included by the probes of
// scripts/gpu/ (each built alone with nvcc; the include is found next to the source).
#pragma once

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                       \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)
