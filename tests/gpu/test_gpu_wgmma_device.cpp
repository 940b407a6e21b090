// The wgmma check on a device (label gpu; exit 77 without one): a short run of `gpu verify --what
// wgmma` (400 tiles per type, 1.6 * 10^6 dot products, every input class), which must find 0
// mismatches for set 0 (fa4sim's model, core/wgmma_model.h), 0 harness faults (class exact) and 0
// host/device model differences on the sample. The full run (10^8 per type) is
// scripts/gpu/wgmma_verify_device.sh.
#include <gtest/gtest.h>

#include <cstdio>

#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_wgmma_verify.h"

using namespace fa4sim;

TEST(GpuWgmmaDevice, ModelIsBitExactOnAShortRun) {
  GpuWgmmaOptions o;
  o.tiles = 400;
  o.sample_tiles = 8;
  const auto results = run_gpu_wgmma_verify(o);
  for (const auto& r : results) {
    std::printf(
        "%s: %llu dot products, set 0 mismatches %llu, exact class %llu, host sample %llu, %.2f s\n",
        wgmma_input_name(r.input), (unsigned long long)r.dots, (unsigned long long)r.sets[0].total,
        (unsigned long long)r.exact_class_mismatches, (unsigned long long)r.host_sample_mismatches,
        r.wall_s);
    for (const auto& s : r.sets)
      std::printf("  %-14s %llu mismatches\n", s.name.c_str(), (unsigned long long)s.total);
    EXPECT_EQ(r.exact_class_mismatches, 0u) << wgmma_input_name(r.input);
    EXPECT_EQ(r.host_sample_mismatches, 0u) << wgmma_input_name(r.input);
    EXPECT_EQ(r.sets[0].total, 0u) << wgmma_input_name(r.input);
  }
}

int main(int argc, char** argv) {
  if (!gpu::available()) {
    std::printf("SKIPPED: %s\n", gpu::unavailable_reason().c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
