// `fa4sim gpu ...` without a device: every subcommand says so and exits 3; bad options are
// still usage errors (exit 2, checked before the device); no report file is left behind.
// CUDA_VISIBLE_DEVICES="" hides every device from the CUDA runtime, so these tests mean the
// same thing in a CUDA build on a GPU machine as in the stub build on CI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "cli_helpers.h"

using fa4sim::test::run_cli;

namespace {
class CliGpu : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CUDA_VISIBLE_DEVICES", "", 1); }
};

void expect_no_gpu(const std::string& args) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 3) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: no CUDA device"), std::string::npos) << args << "\n"
                                                                            << r.err;
  EXPECT_EQ(r.err.find("bug"), std::string::npos) << r.err;
}
}  // namespace

TEST_F(CliGpu, EverySubcommandSaysNoDevice) {
  expect_no_gpu("gpu info");
  expect_no_gpu("gpu verify");
  expect_no_gpu("gpu verify --what formats");
  expect_no_gpu("gpu verify --what mufu");
  expect_no_gpu("gpu verify --what wgmma");
  expect_no_gpu("gpu verify --what wgmma --tiles 3 --seed 7");
  expect_no_gpu("gpu bench-exp --out none");
}

TEST_F(CliGpu, NoReportWrittenWithoutDevice) {
  const auto dir = fa4sim::test::temp_dir("gpu");
  const auto json = (dir / "v.json").string(), data = (dir / "b.json").string();
  EXPECT_EQ(run_cli("gpu verify --json " + json).code, 3);
  EXPECT_EQ(run_cli("gpu bench-exp --out " + data + " --json " + json).code, 3);
  EXPECT_FALSE(std::filesystem::exists(json));
  EXPECT_FALSE(std::filesystem::exists(data));
  std::filesystem::remove_all(dir);
}

TEST_F(CliGpu, BadOptionsAreUsageErrorsEvenWithoutDevice) {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c :
       {Case{"gpu verify --what everything", "--what"},
        Case{"gpu verify --what exp", "did you mean 'exp2'"},
        Case{"gpu verify --degree 6", "--degree"}, Case{"gpu verify --degree 1,x", "--degree"},
        Case{"gpu bench-exp --degree -1", "--degree"}, Case{"gpu bench-exp --reps 0", "--reps"},
        Case{"gpu bench-exp --reps many", "--reps"},
        Case{"gpu verify --json /no/such/dir/v.json", "/no/such/dir"},
        Case{"gpu bench-exp --out /no/such/dir/b.json", "/no/such/dir"},
        Case{"gpu verify --what wgmma --tiles 0", "--tiles"},
        Case{"gpu verify --what wgmma --tiles x", "--tiles"},
        Case{"gpu verify --what wgmma --seed -1", "--seed"},
        Case{"gpu verify --what exp2 --tiles 5", "add --what wgmma"},
        Case{"gpu verify --sample /tmp/x", "add --what wgmma"},
        Case{"gpu verify --what wgmma --sample /dev/null/x", "--sample"}}) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST_F(CliGpu, GroupNeedsASubcommand) {
  auto r = run_cli("gpu");
  EXPECT_EQ(r.code, 2) << r.err;
  auto u = run_cli("gpu bogus");
  EXPECT_EQ(u.code, 2) << u.err;
  auto h = run_cli("gpu --help");
  EXPECT_EQ(h.code, 0);
  for (const char* s : {"info", "verify", "bench-exp"})
    EXPECT_NE(h.out.find(s), std::string::npos) << s;
}

// A bench-exp --out in a folder that does not exist names --out in its hint (it named --json),
// before the device is looked for.
TEST_F(CliGpu, BenchOutInAMissingFolderNamesOut) {
  auto r = fa4sim::test::expect_refused("gpu bench-exp --out /nonexistent-fa4sim-dir/m.json",
                                        "directory '/nonexistent-fa4sim-dir' does not exist");
  EXPECT_NE(r.err.find("pass another --out path"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--json"), std::string::npos) << r.err;
}

// The MUFU tables are checked before the device: a data folder without one is exit 2
// naming the file and the rebuild command, never a silent 1/x and never "no CUDA device".
TEST_F(CliGpu, VerifyMufuWithoutItsTableIsBadInput) {
  const auto dir = fa4sim::test::temp_dir("gpu-mufu");
  setenv("FA4SIM_DATA_DIR", dir.c_str(), 1);
  for (const char* what : {"mufu", "all"}) {
    auto r = run_cli(std::string("gpu verify --what ") + what);
    EXPECT_EQ(r.code, 2) << what << "\n" << r.err;
    EXPECT_NE(r.err.find("fa4sim: error: MUFU table '" + dir.string() +
                         "/mufu/rcp_approx_ftz.bin': missing"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("rebuild with: python3 scripts/datagen/mufu_table.py"), std::string::npos)
        << r.err;
  }
  // With the reciprocal's table, the exp2's is the next one missing; with both, the log2's.
  const std::string repo_mufu = std::string(FA4SIM_SOURCE_DIR) + "/data/mufu/";
  std::filesystem::create_directories(dir / "mufu");
  for (const auto& [have, missing] : {std::pair{"rcp", "ex2"}, std::pair{"ex2", "lg2"}}) {
    for (const char* ext : {".bin", ".json"})
      std::filesystem::copy_file(repo_mufu + have + "_approx_ftz" + ext,
                                 dir / "mufu" / (std::string(have) + "_approx_ftz" + ext));
    auto r = run_cli("gpu verify --what mufu");
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("MUFU table '" + dir.string() + "/mufu/" + missing +
                         "_approx_ftz.bin': missing"),
              std::string::npos)
        << r.err;
  }
  unsetenv("FA4SIM_DATA_DIR");
  std::filesystem::remove_all(dir);
}
