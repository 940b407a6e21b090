// gpu_stub.cpp: include/fa4sim/gpu/gpu.h when fa4sim is built without CUDA (FA4SIM_CUDA=OFF, or
// AUTO with no nvcc). Every call that needs a device throws the "no CUDA device" error, exit
// code 3; nothing pretends to have run.
#include "fa4sim/util/error.h"
#include "fa4sim/core/wgmma_model.h"
#include "fa4sim/gpu/gpu.h"

namespace fa4sim::gpu {

namespace {
constexpr const char* kWhat = "no CUDA device: this fa4sim was built without the CUDA backend";
constexpr const char* kHint =
    "install the CUDA toolkit (nvcc) and rebuild with -DFA4SIM_CUDA=ON on a machine with an "
    "H100/H200";
}  // namespace

bool available() noexcept { return false; }
std::string unavailable_reason() { return std::string(kWhat) + " (" + kHint + ")"; }
void require() { throw Error(kWhat, kHint, kExitNoGpu); }
DeviceInfo device_info() {
  require();
  return {};
}
int sm_clock_now_mhz() { return -1; }
void run(Op, int, std::span<const float>, std::span<uint32_t>) { require(); }
void set_ex2_coeffs(std::span<const float>) {}
StreamTiming run_all_inputs(Op, int, uint64_t,
                            const std::function<void(uint64_t, const uint32_t*, uint64_t)>&) {
  require();
  return {};
}
ExpBenchPoint bench_exp_mix(int, int, int) {
  require();
  return {};
}
const std::vector<RuleConfig>& bench_rule_configs() {
  static const std::vector<RuleConfig> kNone;
  return kNone;
}
ExpBenchPoint bench_exp_rule(int, RuleConfig, int) {
  require();
  return {};
}
WgmmaDeviceResult run_wgmma_verify(WgmmaInput, uint64_t, uint64_t, std::span<const WgmmaModel>,
                                   uint64_t) {
  require();
  return {};
}

}  // namespace fa4sim::gpu
