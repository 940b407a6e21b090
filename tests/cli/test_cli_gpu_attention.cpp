// test_cli_gpu_attention.cpp: `fa4sim gpu attention` bad input, which is refused before any GPU
// work (exit 2, "fa4sim: error: ..."), and the no-GPU path (exit 3) where there is no device.
// The GPU comparisons themselves run on the H200 (scripts/gpu/gpu_attention_device.sh).
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_helpers.h"

using fa4sim::test::run_cli;

namespace {

void expect_usage_error(const std::string& args, const std::string& needle) {
  const auto r = run_cli("gpu attention " + args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << "no partial report on bad input: " << r.out;
}

}  // namespace

TEST(CliGpuAttention, HeadDimNot64Or128IsRefused) {
  expect_usage_error("--head-dim 96", "head dim 96 is not supported");
  expect_usage_error("--head-dim 256", "use --d 64 or 128");  // the old spelling still parses
}

TEST(CliGpuAttention, GqaNeedsDivisibleHeads) {
  expect_usage_error("--heads 3 --kv-heads 2", "not a multiple of --kv-heads");
}

TEST(CliGpuAttention, UnsafeFp8ThresholdNeedsAllowSaturation) {
  // E4M3: max_offset 8 + tau 4 = 12 >= log2(448) = 8.807 (upstream issue #2716).
  expect_usage_error("--dtype e4m3 --tau 4", "--allow-saturation");
  expect_usage_error("--dtype e5m2 --tau 8", "P can saturate");
}

TEST(CliGpuAttention, BadValuesAreRefused) {
  expect_usage_error("--dtype fp32", "--dtype");
  expect_usage_error("--emu-tiles 9", "--emu-tiles");
  expect_usage_error("--tau -1", "tau must be");
  expect_usage_error("--q-scale 0", "--q-scale");
  expect_usage_error("--block-order sideways", "--order");
  expect_usage_error("--seq 0", "--seq");
  expect_usage_error("--bench --dtype e4m3", "--bench times bf16 and fp16 only");
  expect_usage_error("--bench --bench-d 96", "head dim 96");
}

TEST(CliGpuAttention, ShapeTooLargeForTheReferenceIsRefused) {
  expect_usage_error("--seq 65536 --heads 64", "too large for a check");
}

TEST(CliGpuAttention, NoGpuIsExitCode3OrRuns) {
  // With a GPU this runs the (small) check; without one it must say so with exit code 3.
  const auto r = run_cli("gpu attention --seq 128 --heads 1");
  if (r.code == 3) {
    EXPECT_NE(r.err.find("fa4sim: error: no CUDA device"), std::string::npos) << r.err;
  } else {
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("CPU model"), std::string::npos) << r.out;
  }
}

// Without the NVIDIA driver, every gpu command says so (the CUDA runtime's own message, "driver
// version is insufficient", suggested upgrading a driver that is not there); a build without
// nvcc says that it has no CUDA backend.
TEST(CliGpuAttention, NoDriverIsNamedAsSuch) {
  if (std::filesystem::exists("/dev/nvidiactl"))
    GTEST_SKIP() << "this machine has the NVIDIA driver";
  for (const char* cmd : {"gpu attention --seq 128 --heads 1", "gpu upstream check", "gpu info"}) {
    const auto r = run_cli(cmd);
    EXPECT_EQ(r.code, 3) << cmd << "\n" << r.err;
#ifdef FA4SIM_HAVE_CUDA
    EXPECT_NE(r.err.find("no NVIDIA driver on this machine"), std::string::npos) << cmd << "\n"
                                                                                 << r.err;
#else  // no nvcc at build time (a fresh Debian): the stub backend says so instead
    EXPECT_NE(r.err.find("built without the CUDA backend"), std::string::npos) << cmd << "\n"
                                                                               << r.err;
#endif
    EXPECT_EQ(r.err.find("insufficient"), std::string::npos) << cmd << "\n" << r.err;
  }
}
