// `fa4sim exp2`: every bad input (exit 2, a clear message, no report
// file), the --json envelope, and streaming of large --samples without per-sample memory.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;
using fa4sim::test::temp_dir;
using json = nlohmann::json;

namespace {

void expect_usage_error(const std::string& args, const std::string& needle) {
  fa4sim::test::expect_usage_error_without_report("exp2 " + args, needle);
}

TEST(CliExp2, BadDegree) {
  expect_usage_error("--degree 6", "--degree = 6 is out of range");
  expect_usage_error("--degree x", "--degree expects a number, got 'x'");
  expect_usage_error("--degree 3,,5", "--degree needs a number");
}

TEST(CliExp2, BadRange) {
  expect_usage_error("--range 8,-20", "--range is empty: LO = 8 is not below HI = -20");
  expect_usage_error("--range 1", "--range expects LO,HI, got '1'");
  expect_usage_error("--range=-20,300", "leaves [-1022, 128]");
  expect_usage_error("--range 1.00000001,1.00000005", "contains no float32 value");
}

TEST(CliExp2, BadSamples) {
  expect_usage_error("--samples 0", "--samples must be at least 1, got '0'");
  expect_usage_error("--samples -5", "--samples must be at least 1, got '-5'");
  expect_usage_error("--samples 1e13", "--samples 10000000000000 is above the limit of 1e+11");
  expect_usage_error("--samples 1.5", "--samples expects an integer");
}

TEST(CliExp2, BadChoices) {
  expect_usage_error("--out-dtype bf61", "did you mean 'bf16'?");
  expect_usage_error("--sampling uniformm", "did you mean 'uniform'?");
  expect_usage_error("--reference mpp", "did you mean 'mp'?");
}

TEST(CliExp2, MufuModelTakesUpstreamsPolynomialsOnly) {
  expect_usage_error("--mufu-model --coeffs 1,0.69",
                     "--mufu-model compares upstream's polynomials with the MUFU");
}

// --mufu-model: the emulation vs the H200's MUFU model on the CPU, every float32 of the range
// with --exhaustive.
TEST(CliExp2, MufuModelAddsTheComparison) {
  auto r = run_cli("exp2 --mufu-model --exhaustive --range 0.5,1 --degree 3 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& m = j.at("results").at("mufu_model");
  EXPECT_EQ(m.at("emulation_vs_mufu")[0].at("n"), 8388608.0);
  EXPECT_TRUE(m.at("emulation_vs_mufu")[0].contains("weighted"));
  EXPECT_NE(r.out.find("ex2_approx_ftz.bin"), std::string::npos);
}

TEST(CliExp2, JsonIntoMissingDirectory) {
  auto r = run_cli("exp2 --samples 1000 --json /nonexistent-fa4sim-dir/out.json");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("directory '/nonexistent-fa4sim-dir' does not exist"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << "the error comes before the analysis: " << r.out;
}

TEST(CliExp2, UnknownSubcommandSuggestsExp2) {
  auto r = run_cli("exp3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("did you mean 'exp2'"), std::string::npos) << r.err;
}

TEST(CliExp2, JsonEnvelopeAndResults) {
  auto r = run_cli("exp2 --samples 20000 --degree 3,5 --seed 7 --threads 2 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "fa4sim/report-v1");
  EXPECT_EQ(j["command"], "exp2");
  for (const char* k : {"degree", "range", "samples", "sampling", "exhaustive", "out_dtype", "seed",
                        "threads", "reference"})
    EXPECT_TRUE(j["params"].contains(k)) << k;
  EXPECT_EQ(j["params"]["seed"], 7);
  EXPECT_EQ(j["params"]["samples"], 20000);
  for (const char* k : {"git", "date", "host", "threads", "elapsed_s"})
    EXPECT_TRUE(j["provenance"].contains(k)) << k;
  const json& d = j["results"]["degrees"];
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["degree"], 3);
  EXPECT_EQ(d[1]["degree"], 5);
  for (const auto& row : d) {
    for (const char* k :
         {"degree", "n", "fp32_max_rel", "fp32_max_rel_at", "fp32_mean_rel", "fp32_max_ulp",
          "out_dtype", "identical_pct", "within_1ulp_pct", "max_ulp"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_EQ(row["n"], 20000);
    EXPECT_EQ(row["out_dtype"], "bf16");
    EXPECT_FALSE(row.contains("weighted"));
  }
  EXPECT_GT(d[0]["fp32_max_rel"].get<double>(), d[1]["fp32_max_rel"].get<double>());
}

TEST(CliExp2, ExhaustiveHasWeightedStatsAndTable) {
  auto dir = temp_dir("exp2ok");
  const auto out = (dir / "e.json").string();
  auto r = run_cli("exp2 --exhaustive --range 1,1.5 --degree 3 --out-dtype fp16 --json " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("value-weighted"), std::string::npos) << r.out;
  const json j = json::parse(fa4sim::test::slurp(out));
  const json& d = j["results"]["degrees"][0];
  EXPECT_EQ(d["n"], 1u << 22);
  ASSERT_TRUE(d.contains("weighted"));
  EXPECT_NEAR(d["weighted"]["total_weight"].get<double>(), 0.5, 1e-12);
  EXPECT_EQ(d["weighted"]["out_dtype"], "fp16");
  std::filesystem::remove_all(dir);
}

// --samples streams in fixed chunks: 2e8 samples (800 MB if they were held as floats) run in a
// process limited to 512 MB of address space.
TEST(CliExp2, LargeSampleCountsStreamInBoundedMemory) {
  const std::string cmd = std::string("ulimit -v 524288; ") + FA4SIM_BIN +
                          " exp2 --samples 2e8 --degree 3 --threads 2 >/dev/null 2>&1";
  EXPECT_EQ(std::system(("bash -c '" + cmd + "'").c_str()), 0);
}

}  // namespace
