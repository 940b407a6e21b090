// attention_stub.cpp: the GPU attention entry points when fa4sim is built without CUDA. Every
// call throws the "no CUDA device" error (exit code 3); nothing pretends to have run.
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu.h"

namespace fa4sim {
namespace {
[[noreturn]] void no_gpu() {
  throw Error("no CUDA device: this fa4sim was built without the CUDA backend",
              "rebuild with -DFA4SIM_CUDA=ON (nvcc) on a machine with an H100/H200", kExitNoGpu);
}
}  // namespace

std::string gpu_attn_device_name() { no_gpu(); }
GpuAttnOutputs gpu_attn_run(const GpuAttnShape&, const GpuAttnSoftmax&, const GpuAttnInputs&, bool,
                            bool) {
  no_gpu();
}
std::vector<double> gpu_attn_time(const GpuAttnShape&, const GpuAttnSoftmax&, uint64_t, int, int) {
  no_gpu();
}

}  // namespace fa4sim
