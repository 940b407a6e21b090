// `fa4sim gpu upstream ...` without a device: bad options are usage errors (exit 2) with
// upstream's own reason where upstream refuses the shape, checked before anything else; a valid
// command then exits 3 (no CUDA device). CUDA_VISIBLE_DEVICES="" hides every device, so these
// mean the same on a GPU machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "cli_helpers.h"

using fa4sim::test::run_cli;

namespace {
class CliGpuUpstream : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CUDA_VISIBLE_DEVICES", "", 1); }
};

void expect_usage(const std::string& args, const std::string& needle) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
}
}  // namespace

TEST_F(CliGpuUpstream, UnsupportedShapesGiveUpstreamsReason) {
  expect_usage("gpu upstream check --dtype e4m3",
               "FP8 is only supported on SM100 (compute capability 10.x) for FA4 CuTe.");
  expect_usage("gpu upstream check --dtype e5m2", "FP8 is only supported on SM100");
  expect_usage("gpu upstream check --d 512", "must be between 8 and 256 and divisible by 8");
  expect_usage("gpu upstream check --d 60", "must be between 8 and 256 and divisible by 8");
  expect_usage("gpu upstream check --heads 3 --kv-heads 2", "not a multiple of --kv-heads");
}

TEST_F(CliGpuUpstream, BadOptionsAreUsageErrors) {
  expect_usage("gpu upstream check --dtype bf61", "bf16");
  expect_usage("gpu upstream check --seq 0", "--seq");
  expect_usage("gpu upstream check --q-scale -1", "--q-scale");
  expect_usage("gpu upstream check --q-scale nan", "--q-scale");
  expect_usage("gpu upstream check --seq 65536 --heads 32", "too large for a check");
  expect_usage("gpu upstream exp2 --degree 6", "--degree");
  expect_usage("gpu upstream exp2 --degree 3,x", "--degree");
  expect_usage("gpu upstream exp2 --inputs-log2 40", "--inputs-log2");
  expect_usage("gpu upstream check --tau -1", "--tau");
  expect_usage("gpu upstream check --emu 9", "--emu");
  expect_usage("gpu upstream check --dtype fp16 --tau 8 --max-offset 8", "P can saturate");
  expect_usage("gpu upstream check --suite --suite-tricks", "exclude each other");
  expect_usage("gpu upstream check --count-rescales", "variant only");
  expect_usage("gpu upstream bench --emu 0,9", "--emu");
  expect_usage("gpu upstream bench --d 64,12", "divisible by 8");
  expect_usage("gpu upstream bench --tau 0,x", "--tau");
  expect_usage("gpu upstream bench --iters 0", "--iters");
  expect_usage("gpu upstream check --model fast", "--model");
  expect_usage("gpu upstream check --unfused lse,lse", "--unfused");
  expect_usage("gpu upstream check --unfused sum", "--unfused");
  expect_usage("gpu upstream check --save a --from b", "exclude each other");
  expect_usage("gpu upstream check --suite --from /nonexistent/fa4sim-saved", "manifest.json");
}

// --save without a device: exit 3 before anything is written.
TEST_F(CliGpuUpstream, SaveWithoutADeviceWritesNothing) {
  const auto dir = fa4sim::test::temp_dir("gpu-upstream-save");
  const auto save = (dir / "saved").string();
  auto r = run_cli("gpu upstream check --d 64 --seq 128 --save " + save);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_FALSE(std::filesystem::exists(save));
  std::filesystem::remove_all(dir);
}

TEST_F(CliGpuUpstream, ValidCommandsSayNoDeviceAndWriteNothing) {
  const auto dir = fa4sim::test::temp_dir("gpu-upstream");
  const auto json = (dir / "u.json").string();
  for (const std::string cmd :
       {"gpu upstream check --d 64 --seq 300 --seq-k 333 --causal", "gpu upstream check --suite",
        "gpu upstream check --suite-tricks", "gpu upstream check --tau 8 --emu 2",
        "gpu upstream bench --seq 1024", "gpu upstream check --suite-tricks --count-rescales",
        "gpu upstream bench --seq 16384 --heads 32", "gpu upstream exp2 --degree 3"}) {
    auto r = run_cli(cmd + " --json " + json);
    EXPECT_EQ(r.code, 3) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(json)) << cmd;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(CliGpuUpstream, HelpNamesTheInstallScript) {
  auto r = run_cli("gpu upstream --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("scripts/gpu/upstream_install.sh"), std::string::npos) << r.out;
}

// A binary copied alone, with its source tree's scripts/drivers/ hidden (a private mount namespace with
// an empty folder over it): `gpu upstream info` names the missing driver script with exit 2 (it
// printed "torch not importable" and "the upstream driver printed no JSON" with exit 1).
TEST_F(CliGpuUpstream, MissingDriverScriptIsNamed) {
  if (getuid() != 0 || std::system("unshare -m true 2>/dev/null") != 0)
    GTEST_SKIP() << "needs root and mount namespaces to hide the source tree's scripts/drivers/";
  const auto dir = fa4sim::test::temp_dir("lone");
  std::filesystem::copy_file(FA4SIM_BIN, dir / "fa4sim");
  const std::string drivers = std::string(FA4SIM_SOURCE_DIR) + "/scripts/drivers";
  const std::string cmd = "unshare -m sh -c 'mount -t tmpfs none " + drivers + " && " +
                          (dir / "fa4sim").string() + " gpu upstream info' >/dev/null 2>" +
                          (dir / "err").string();
  const int status = std::system(cmd.c_str());
  const std::string err = fa4sim::test::slurp((dir / "err").string());
  EXPECT_EQ(WEXITSTATUS(status), 2) << err;
  EXPECT_NE(
      err.find("fa4sim: error: cannot find the upstream driver '" + drivers + "/fa4_upstream.py'"),
      std::string::npos)
      << err;
  std::filesystem::remove_all(dir);
}
