// gpu_host.h: host-only helpers of the CUDA backend, compiled by the host compiler (gpu_host.cpp)
// so that gpu_backend.cu needs neither fmt nor NVML headers.
//
// Errors: fail_*() throw fa4sim::Error with the backend's exit codes.
// NVML: the few readings the GPU backend reports (driver version, current clocks).
// NVML is opened with dlopen("libnvidia-ml.so.1") at first use, never linked: a binary linked
// against it would not even start on a machine without the NVIDIA driver (CI), and the readings
// are provenance, not correctness. Every function returns ""/-1 when NVML is unavailable.
#pragma once

#include <string>

namespace fa4sim::gpu {

// Error(what, hint, kExitNoGpu): no device, or the device failed (a CUDA call returned an error).
[[noreturn]] void fail_gpu(const std::string& what, const std::string& hint);
// Error(what, hint, kExitUsage): a bad argument reached the backend.
[[noreturn]] void fail_usage(const std::string& what, const std::string& hint);

// Whether the NVIDIA driver's libcuda.so.1 can be loaded (tells "no driver" from "old driver").
bool driver_library_present();
// Why no CUDA device can be used, from cudaGetDeviceCount's message (empty: it succeeded with 0
// devices): the runtime answers "driver version is insufficient" also when there is no driver at
// all, so that case reads "no NVIDIA driver on this machine (libcuda.so.1 not found)".
std::string no_device_reason(const std::string& cuda_message, bool insufficient_driver);

}  // namespace fa4sim::gpu

namespace fa4sim::gpu::nvml {

std::string driver_version();  // e.g. "580.159.04"
// clock_type: 0 graphics, 1 SM, 2 memory (nvmlClockType_t). Current clock in MHz, or -1.
int clock_mhz(const std::string& pci_bus_id, int clock_type);

}  // namespace fa4sim::gpu::nvml
