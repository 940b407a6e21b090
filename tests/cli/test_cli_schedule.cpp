// `fa4sim schedule`: the documented outputs and every bad input (exit 2, clear message).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;
using fa4sim::test::temp_dir;
using json = nlohmann::json;

namespace {

void expect_usage_error(const std::string& args, const std::string& needle) {
  fa4sim::test::expect_usage_error_without_report("schedule " + args, needle);
}

std::string edited(const std::string& rel, const std::string& name, void (*edit)(json&)) {
  static const auto dir = temp_dir("schedule");
  json j = json::parse(fa4sim::test::slurp(std::string(FA4SIM_SOURCE_DIR) + "/" + rel));
  edit(j);
  const std::string path = (dir / name).string();
  std::ofstream(path) << j.dump(2);
  return path;
}

}  // namespace

TEST(CliSchedule, ReportHasStockTricksAndBest) {
  auto r =
      run_cli("schedule --arch h200,b200 --d 64 --seq 4096 --tau 8 --emu-fraction 0.25 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["command"], "schedule");
  ASSERT_EQ(j["results"]["rows"].size(), 2u);
  for (const auto& row : j["results"]["rows"]) {
    for (const char* k : {"stock", "with_tricks"}) {
      EXPECT_GT(row[k]["tflops"].get<double>(), 0) << row["arch"];
      EXPECT_FALSE(row[k]["binding"].get<std::string>().empty());
    }
    EXPECT_GE(row["best"]["tflops"].get<double>(),
              row["stock"]["tflops"].get<double>() * (1 - 1e-12));
  }
  EXPECT_EQ(j["params"]["emu_fraction"], 0.25);
}

TEST(CliSchedule, InputsListPredictsEachEntry) {
  static const auto dir = temp_dir("schedule-inputs");
  const std::string path = (dir / "in.json").string();
  std::ofstream(path)
      << R"([{"arch": "h200", "d": 64, "seq": 4096}, {"arch": "h200", "d": 128, "causal": true}])";
  auto r = run_cli("schedule --inputs " + path + " --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json p = json::parse(r.out)["results"]["predictions"];
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0]["tile_m"], 192);
  EXPECT_EQ(p[1]["tile_m"], 128);
}

TEST(CliSchedule, BadInput) {
  expect_usage_error("--d 100", "multiple of 8");
  expect_usage_error("--d 0", "--d");
  expect_usage_error("--seq 0", "--seq");
  expect_usage_error("--emu-fraction 1.5", "--emu-fraction");
  expect_usage_error("--emu-fraction -0.1", "--emu-fraction");
  expect_usage_error("--arch nosuch", "nosuch");
  expect_usage_error("--arch a100", "no schedule model for a100");
  expect_usage_error("--heads 32 --kv-heads 5", "not a multiple of kv heads");
  expect_usage_error("--tile 100x128", "tile 100x128");
  expect_usage_error("--clock 50", "--clock = 50 is not a clock");
  expect_usage_error("--clock -1", "--clock");
  // a custom arch without a rate the schedule model needs: the field is named
  const std::string arch = edited("data/archs/h200.json", "no_mufu.json", [](json& j) {
    j["name"] = "h200_edit";
    j["fields"].erase("mufu_ex2_per_clk_sm");
  });
  expect_usage_error("--arch " + arch, "mufu_ex2_per_clk_sm");
  const std::string spec = edited("data/schedule/sm90.json", "no_latency.json",
                                  [](json& j) { j["calibrated"].erase("wgmma_latency"); });
  expect_usage_error("--spec " + spec, "calibrated.wgmma_latency");
  expect_usage_error("--inputs /nonexistent.json", "does not exist");
}

// A kernel description whose fields have the wrong JSON type is refused by name (found by
// tests/fuzz/run_json_fuzz.sh: it ended in "this is a bug in fa4sim").
TEST(CliSchedule, SpecWithWrongFieldTypesIsRefused) {
  const auto dir = fa4sim::test::temp_dir("schedule-spec");
  const std::string p = (dir / "spec.json").string();
  for (const char* text :
       {R"({"schema": {}})", R"({"schema": "fa4sim/schedule-v1", "kernel": 90})"}) {
    std::ofstream(p) << text;
    fa4sim::test::expect_refused("schedule --arch h200 --spec " + p, "schedule file '" + p + "'");
  }
  std::filesystem::remove_all(dir);
}
