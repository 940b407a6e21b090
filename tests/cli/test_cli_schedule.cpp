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
  expect_usage_error("--arch nosuch",
                     "unknown --arch 'nosuch' (valid: a100, h100_sxm, h200, b200, b300)");
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
  // an --inputs entry naming an unknown arch: refused, naming the entry and the known archs
  static const auto dir = fa4sim::test::temp_dir("schedule-bad-inputs");
  const std::string in = (dir / "in.json").string();
  std::ofstream(in) << R"([{"arch": "h200", "d": 64}, {"arch": "h201", "d": 64}])";
  expect_usage_error("--inputs " + in, "unknown arch in inputs file '" + in +
                                           "', entry 1: 'h201' (did you mean 'h200'?");
  EXPECT_EQ(run_cli("schedule --no-search --arch h100 --d 64").code, 0);  // as fa4sim roofline
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

namespace {

json stock_of(const std::string& args) {
  auto r = run_cli("schedule --no-search --json - " + args);
  EXPECT_EQ(r.code, 0) << r.err;
  return r.code == 0 ? json::parse(r.out)["results"]["rows"][0]["stock"] : json{};
}

}  // namespace

// (Note [Kernel factors]) A kernel of data/schedule/sm90_kernel_factors.json is scaled by its factor
// on the archs the file names; --kernel-factors none, a --spec, a --tile or another arch leave the
// model alone.
TEST(CliSchedule, KernelFactorsScaleTheirKernelsOnly) {
  const json file = json::parse(fa4sim::test::slurp(std::string(FA4SIM_SOURCE_DIR) +
                                                    "/data/schedule/sm90_kernel_factors.json"));
  const json* k224 = nullptr;
  for (const json& k : file["kernels"])
    if (k["d"] == 224 && k["causal"] == false && k["tau"] == 0 && k["emu_fraction"] == 0) k224 = &k;
  ASSERT_NE(k224, nullptr) << "the file has no stock d 224 kernel";
  const std::string shape = "--d 224 --batch 2 --heads 8 --seq 2048 ";
  const json with = stock_of(shape), alone = stock_of(shape + "--kernel-factors none");
  EXPECT_EQ(with["kernel_factor"], (*k224)["factor"]);
  EXPECT_EQ(with["kernel_factor_measurements"], (*k224)["measurements"]);
  EXPECT_NEAR(with["ms"].get<double>() / alone["ms"].get<double>(), (*k224)["factor"].get<double>(),
              1e-12);
  EXPECT_EQ(with["clock_mhz"], alone["clock_mhz"]);
  EXPECT_EQ(with["iteration_cycles"], alone["iteration_cycles"]);
  EXPECT_EQ(alone["kernel_factor"], 1.0);
  EXPECT_EQ(alone["kernel_factor_measurements"], 0);
  // a spec of one's own: the default factors were taken against data/schedule/sm90.json
  const std::string spec = std::string(FA4SIM_SOURCE_DIR) + "/data/schedule/sm90.json";
  EXPECT_EQ(stock_of(shape + "--spec " + spec)["kernel_factor_measurements"], 0);
  EXPECT_EQ(
      stock_of(shape + "--spec " + spec + " --kernel-factors " + std::string(FA4SIM_SOURCE_DIR) +
               "/data/schedule/sm90_kernel_factors.json")["kernel_factor"],
      (*k224)["factor"]);
  EXPECT_EQ(stock_of(shape + "--tile 128x64")["kernel_factor_measurements"], 0);
  EXPECT_EQ(stock_of(shape + "--arch h100_sxm")["kernel_factor_measurements"], 0);
  // a kernel the file lacks (d 8 was never measured)
  EXPECT_EQ(stock_of("--d 8")["kernel_factor_measurements"], 0);
  // the emulation's degree is compiled in: every measured kernel emulates with degree 3
  const auto tricks = [](const std::string& args) {
    auto r = run_cli("schedule --no-search --json - --d 224 --tau 8 --emu-fraction 0.25 " + args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? json::parse(r.out)["results"]["rows"][0]["with_tricks"] : json{};
  };
  EXPECT_GT(tricks("--degree 3")["kernel_factor_measurements"].get<int>(), 0);
  EXPECT_EQ(tricks("--degree 5")["kernel_factor_measurements"], 0);
}

TEST(CliSchedule, BadKernelFactorsFile) {
  expect_usage_error("--kernel-factors /nonexistent.json", "does not exist");
  expect_usage_error("--kernel-factors ''", "needs a value");
  const std::string rel = "data/schedule/sm90_kernel_factors.json";
  expect_usage_error("--kernel-factors " + edited(rel, "kf_no_factor.json",
                                                  [](json& j) { j["kernels"][0].erase("factor"); }),
                     "missing field 'kernels.0.factor'");
  expect_usage_error("--kernel-factors " + edited(rel, "kf_zero.json",
                                                  [](json& j) { j["kernels"][1]["factor"] = 0; }),
                     "field 'kernels.1.factor' = 0 is out of range");
  expect_usage_error("--kernel-factors " + edited(rel, "kf_causal.json",
                                                  [](json& j) { j["kernels"][0]["causal"] = 1; }),
                     "'kernels.0.causal' must be true or false");
  expect_usage_error(
      "--kernel-factors " + edited(rel, "kf_schema.json", [](json& j) { j["schema"] = "x"; }),
      "not a fa4sim/schedule-kernel-factors-v1 object");
  const auto refused = [&](const char* name, void (*edit)(json&), const std::string& needle) {
    expect_usage_error("--kernel-factors " + edited(rel, name, edit), needle);
  };
  refused(
      "kf_archs.json", [](json& j) { j["archs"] = "h200"; },
      "field 'archs' must be a non-empty list of arch names");
  refused(
      "kf_archs_empty.json", [](json& j) { j["archs"] = json::array(); },
      "field 'archs' must be a non-empty list of arch names");
  refused(
      "kf_d.json", [](json& j) { j["kernels"][2]["d"] = 100; },
      "field 'kernels.2.d' = 100 is not a whole multiple of 8");
  refused(
      "kf_n.json", [](json& j) { j["kernels"][0]["measurements"] = 1.5; },
      "field 'kernels.0.measurements' = 1.5 is not a whole multiple of 1");
  refused(
      "kf_dup.json", [](json& j) { j["kernels"][1] = j["kernels"][0]; },
      "kernels.1 repeats an earlier kernel");
}
