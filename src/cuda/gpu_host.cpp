// gpu_host.cpp: host-only helpers of the CUDA backend: errors and dlopen-based NVML readings
// (see gpu_host.h for why NVML is not linked).
#include "gpu_host.h"

#include <dlfcn.h>

#include "fa4sim/util/error.h"

namespace fa4sim::gpu {

void fail_gpu(const std::string& what, const std::string& hint) {
  throw Error(what, hint, kExitNoGpu);
}
void fail_usage(const std::string& what, const std::string& hint) {
  throw Error(what, hint, kExitUsage);
}

bool driver_library_present() {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) return false;
  dlclose(lib);
  return true;
}

std::string no_device_reason(const std::string& cuda_message, bool insufficient_driver) {
  if (insufficient_driver && !driver_library_present())
    return "no NVIDIA driver on this machine (libcuda.so.1 not found)";
  return cuda_message.empty() ? "the driver reports 0 devices" : cuda_message;
}

}  // namespace fa4sim::gpu

namespace fa4sim::gpu::nvml {

namespace {

using nvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using nvmlDevice = void*;

struct Api {
  bool ok = false;
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*driver)(char*, unsigned) = nullptr;
  nvmlReturn (*by_bus)(const char*, nvmlDevice*) = nullptr;
  nvmlReturn (*clock)(nvmlDevice, int, unsigned*) = nullptr;
};

template <typename F>
bool load(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

const Api& api() {
  static const Api a = [] {
    Api x;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return x;
    // Kept open for the life of the process (NVML is shut down by the driver at exit).
    if (!load(lib, "nvmlInit_v2", x.init) || !load(lib, "nvmlSystemGetDriverVersion", x.driver) ||
        !load(lib, "nvmlDeviceGetHandleByPciBusId_v2", x.by_bus) ||
        !load(lib, "nvmlDeviceGetClockInfo", x.clock))
      return x;
    x.ok = x.init() == 0;
    return x;
  }();
  return a;
}

}  // namespace

std::string driver_version() {
  const Api& a = api();
  if (!a.ok) return "";
  char buf[96] = {0};
  return a.driver(buf, sizeof buf) == 0 ? std::string(buf) : std::string();
}

int clock_mhz(const std::string& pci_bus_id, int clock_type) {
  const Api& a = api();
  if (!a.ok) return -1;
  nvmlDevice dev = nullptr;
  if (a.by_bus(pci_bus_id.c_str(), &dev) != 0) return -1;
  unsigned mhz = 0;
  return a.clock(dev, clock_type, &mhz) == 0 ? static_cast<int>(mhz) : -1;
}

}  // namespace fa4sim::gpu::nvml
