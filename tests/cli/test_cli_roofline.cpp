// `fa4sim roofline`: the documented outputs and every bad input (exit 2, clear message).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;
using fa4sim::test::temp_dir;
using json = nlohmann::json;

namespace {

void expect_usage_error(const std::string& args, const std::string& needle) {
  auto r = run_cli("roofline " + args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << args << ": no partial report\n" << r.out;
}

std::string write_file(const std::string& name, const std::string& text) {
  static const auto dir = temp_dir("roofline");
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// data/archs/b200.json with one edit applied to the parsed JSON.
std::string b200_variant(const std::string& name, const std::function<void(json&)>& edit) {
  json j =
      json::parse(fa4sim::test::slurp(std::string(FA4SIM_SOURCE_DIR) + "/data/archs/b200.json"));
  j["name"] = "b200_variant";
  edit(j);
  return write_file(name, j.dump(2));
}

json rows_of(const std::string& args) {
  auto r = run_cli("roofline " + args + " --json -");
  EXPECT_EQ(r.code, 0) << r.err;
  return json::parse(r.out)["results"];
}

const json& row_for(const json& rows, const std::string& arch) {
  for (const auto& r : rows)
    if (r["arch"] == arch) return r;
  static const json none;
  ADD_FAILURE() << "no row for " << arch;
  return none;
}

}  // namespace

// ---- tile ratios and the schedule

// results.pipe_counts: every path's counts are the sums of data/exp_pipe_model.json's ops (the
// hardware and softmax_other rows once showed zeros: counted at "degree -1", below every op's
// min_degree 0).
TEST(CliRoofline, PipeCountsSumTheModelFile) {
  const json model = json::parse(
      fa4sim::test::slurp(std::string(FA4SIM_SOURCE_DIR) + "/data/exp_pipe_model.json"));
  auto sum = [&](const std::string& path, const std::string& pipe, int degree) {
    double n = 0;
    for (const auto& op : model[path]) {
      if (op["pipe"] != pipe || degree < op.value("min_degree", 0)) continue;
      n += op["count"].is_string() ? double(degree) : op["count"].get<double>();
    }
    return n;
  };
  const json counts = rows_of("--d 64 --arch h100_sxm")["pipe_counts"];
  ASSERT_EQ(counts.size(), 8u);
  int checked = 0;
  for (const auto& row : counts) {
    const std::string path = row["path"] == "hardware exp2"   ? "hardware_exp2"
                             : row["path"] == "emulated exp2" ? "emulated_exp2"
                                                              : "softmax_other";
    const int deg = row["degree"].is_null() ? 0 : row["degree"].get<int>();
    EXPECT_DOUBLE_EQ(row["fma_lane_ops"].get<double>(), sum(path, "fma", deg)) << row;
    EXPECT_DOUBLE_EQ(row["alu_ops"].get<double>(), sum(path, "alu", deg)) << row;
    EXPECT_DOUBLE_EQ(row["mufu_ops"].get<double>(), sum(path, "mufu", deg)) << row;
    EXPECT_GT(row["issue_scalar"].get<double>(), 0) << row;
    ++checked;
  }
  EXPECT_EQ(checked, 8);
  EXPECT_EQ(counts[0]["mufu_ops"], 1.0);      // hardware exp2: one MUFU op
  EXPECT_EQ(counts[7]["fma_lane_ops"], 2.0);  // softmax_other: 2 FMA + 1.5 ALU
  EXPECT_EQ(counts[7]["alu_ops"], 1.5);
}

TEST(CliRoofline, D64RatiosB200TwoHopperAndB300One) {
  const json res = rows_of("--d 64");
  EXPECT_EQ(res["rows"].size(), 5u);  // all known architectures by default
  EXPECT_DOUBLE_EQ(row_for(res["rows"], "b200")["exp_over_mma"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row_for(res["rows"], "h100_sxm")["exp_over_mma"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(row_for(res["rows"], "b300")["exp_over_mma"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(row_for(res["rows"], "b200")["emu_fraction_to_tie"].get<double>(), 0.5);
}

TEST(CliRoofline, D128Table1) {
  const json row = row_for(rows_of("--d 128 --arch b200")["rows"], "b200");
  EXPECT_DOUBLE_EQ(row["cycles_mma"].get<double>(), 1024);
  EXPECT_DOUBLE_EQ(row["cycles_exp"].get<double>(), 1024);
  EXPECT_DOUBLE_EQ(row["cycles_smem"].get<double>(), 768);
  EXPECT_DOUBLE_EQ(row["exp_over_mma"].get<double>(), 1.0);
  auto text = run_cli("roofline --d 128 --arch b200");
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("mma=exp"), std::string::npos) << text.out;
}

TEST(CliRoofline, BackwardRowsAndSweep) {
  const json rows = rows_of("--arch b200 --direction bwd --d 128")["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0]["smem_over_mma"].get<double>(), 1.30);
  EXPECT_DOUBLE_EQ(rows[1]["smem_over_mma"].get<double>(), 1.05);
  EXPECT_EQ(rows_of("--arch b200 --sweep-d 32:256:32")["rows"].size(), 8u);
  EXPECT_EQ(rows_of("--arch b200,h200 --d 64,128 --direction all --dtype all")["rows"].size(),
            2u * (1 + 2 + 1 + 2) + 2u * (1 + 2 + 1));  // per d: fwd bf16, bwd bf16 1/2-CTA, fwd
  // fp8, and on b200 (not h200) fwd fp6 and fp4
}

TEST(CliRoofline, ScheduleTableAndCustom) {
  auto r = run_cli("roofline --arch b200 --schedule");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* pct : {"match: 18.75 %", "match: 12.50 %", "match: 6.25 %", "match: 25.00 %"})
    EXPECT_NE(r.out.find(pct), std::string::npos) << pct << "\n" << r.out;
  EXPECT_EQ(r.out.find("DIFFERS"), std::string::npos);
  const json s = rows_of("--arch b200 --schedule 16,4,1")["schedule"];
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0]["fraction"].get<double>(), 0.125);
  EXPECT_EQ(s[0]["emulated"].size(), 16u);
  EXPECT_EQ(s[0]["emulated"][0].get<int>(), 44);  // fragment 1, k = 12
  // freq alone: res 4, start_frg 0 by default: (8, 4, 0) emulates 3 fragments x 16 = 48 columns.
  EXPECT_EQ(rows_of("--arch b200 --schedule 8")["schedule"][0]["emulated"].size(), 48u);
}

TEST(CliRoofline, PipeModelCurveForHopperAndB200) {
  auto r = run_cli("roofline --arch h100_sxm,h200,b200");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Predicted exps (exp2 only) per clock per SM"), std::string::npos);
  EXPECT_NE(r.out.find("30.00 @ f=0.467"), std::string::npos) << r.out;  // Hopper best
  EXPECT_NE(r.out.find("37.33 @ f=0.571"), std::string::npos) << r.out;  // B200 best
  const json pm = rows_of("--arch b200 --degree 3,5")["pipe_model"];
  EXPECT_EQ(pm.size(), 2u * 17u);
}

TEST(CliRoofline, MeasuredHandMadeFile) {
  const std::string path = write_file("h200-bench-exp.json", R"({
    "schema": "fa4sim/bench-exp-v1", "device": "hand-made H200 numbers", "arch": "h200",
    "provenance": {"command": "written by hand for a test", "date": "2026-11-29", "host": "none"},
    "points": [{"degree": 3, "f": 0.0, "exps_per_clk_sm": 16.0},
               {"degree": 3, "f": 0.5, "exps_per_clk_sm": 24.0}]})");
  const json m = rows_of("--arch h200 --measured " + path)["measured"];
  ASSERT_EQ(m["points"].size(), 2u);
  EXPECT_DOUBLE_EQ(m["points"][0]["ratio"].get<double>(), 1.0);  // 16 measured / 16 predicted
  // f = 0.5 on Hopper: issue (1 + 3.5) / 128 -> 128 / 4.5 = 28.44 predicted; 24 / 28.44 = 0.84375.
  EXPECT_NEAR(m["points"][1]["predicted_exps_per_clk_sm"].get<double>(), 128 / 4.5, 1e-9);
  EXPECT_NEAR(m["points"][1]["ratio"].get<double>(), 24 * 4.5 / 128, 1e-12);
  auto text = run_cli("roofline --arch h200 --measured " + path);
  EXPECT_NE(text.out.find("Measured vs predicted"), std::string::npos);
  // A bad measured file is refused before any output.
  expect_usage_error("--measured " + write_file("bad.json", R"({"schema": "fa4sim/bench-exp-v1",
      "device": "x", "arch": "h200", "points": [{"degree": 3, "f": "half", "exps_per_clk_sm": 1}]})"),
                     "'points[0].f' must be a number");
  expect_usage_error(
      "--measured " + write_file("unknown-arch.json", R"({"schema": "fa4sim/bench-exp-v1",
      "device": "x", "arch": "h2000", "points": [{"degree": 3, "f": 0, "exps_per_clk_sm": 16}]})"),
      "arch 'h2000' is not a known architecture (did you mean 'h200'?");
}

TEST(CliRoofline, CustomArchFileIsAccepted) {
  const std::string path =
      b200_variant("ok.json", [](json& j) { j["fields"]["mufu_ex2_per_clk_sm"]["value"] = 32; });
  const json res = rows_of("--arch b200 --arch-file " + path + " --d 64");
  EXPECT_DOUBLE_EQ(row_for(res["rows"], "b200_variant")["exp_over_mma"].get<double>(), 1.0);
  // --arch also takes a path.
  EXPECT_EQ(rows_of("--arch " + path)["rows"].size(), 1u);
}

// ---- bad input

TEST(CliRoofline, BadHeadDim) {
  expect_usage_error("--d 0", "--d = 0 is out of range");
  expect_usage_error("--d -64", "--d = -64 is out of range");
  expect_usage_error("--d 1e9", "--d = 1e9 is out of range");
  expect_usage_error("--d 64.5", "--d expects an integer");
  expect_usage_error("--d abc", "--d expects a number");
  expect_usage_error("--sweep-d 256:32:32", "did you mean 32:256:32");
  expect_usage_error("--sweep-d 32:256", "--sweep-d expects LO:HI:STEP");
  expect_usage_error("--sweep-d 32:256:0", "--sweep-d STEP = 0 is out of range");
}

TEST(CliRoofline, UnknownArchSuggests) {
  expect_usage_error("--arch b2000", "did you mean 'b200'");
  expect_usage_error("--arch h20", "did you mean 'h200'");
  expect_usage_error("--arch zzzzzz", "valid: a100, h100_sxm, h200, b200, b300, all");
}

TEST(CliRoofline, MalformedArchFileNamesTheField) {
  expect_usage_error(
      "--arch-file " +
          b200_variant("missing.json", [](json& j) { j["fields"].erase("mufu_ex2_per_clk_sm"); }),
      "field 'fields.mufu_ex2_per_clk_sm' is missing");
  expect_usage_error(
      "--arch-file " +
          b200_variant("type.json", [](json& j) { j["fields"]["sm_count"]["value"] = "148"; }),
      "field 'fields.sm_count.value' must be a number, got string");
  expect_usage_error(
      "--arch-file " +
          b200_variant("neg.json",
                       [](json& j) { j["fields"]["mufu_ex2_per_clk_sm"]["value"] = -16; }),
      "field 'fields.mufu_ex2_per_clk_sm.value' must be > 0, got -16");
  expect_usage_error(
      "--arch-file " +
          b200_variant("nosrc.json",
                       [](json& j) { j["fields"]["smem_bytes_per_clk_sm"].erase("source"); }),
      "field 'fields.smem_bytes_per_clk_sm.source' is missing");
  expect_usage_error("--arch-file " + write_file("syntax.json", "{\"schema\": "),
                     "is not valid JSON");
  expect_usage_error("--arch-file /nonexistent/arch.json", "does not exist");
  expect_usage_error(
      "--arch b200 --arch-file " + b200_variant("dup.json", [](json& j) { j["name"] = "b200"; }),
      "architecture 'b200' is given twice");
}

// Rates far outside any GPU's (1e-308 exps per clock, 1e308 FLOP per clock) are refused: they
// made cells inf and a 300-digit number in the table.
TEST(CliRoofline, ExtremeArchRatesAreRefused) {
  expect_usage_error(
      "--arch-file " +
          b200_variant("tiny.json",
                       [](json& j) { j["fields"]["mufu_ex2_per_clk_sm"]["value"] = 1e-308; }),
      "field 'fields.mufu_ex2_per_clk_sm.value' must be in 0.001..1e9, got 1e-308");
  expect_usage_error(
      "--arch-file " +
          b200_variant("huge.json",
                       [](json& j) { j["fields"]["mma_bf16_flop_per_clk_sm"]["value"] = 1e308; }),
      "field 'fields.mma_bf16_flop_per_clk_sm.value' must be in 0.001..1e9, got 1e+308");
}

// An arch or measured file of 150,000 nested arrays is refused by name, like any malformed file.
TEST(CliRoofline, DeeplyNestedJsonIsRefused) {
  const std::string deep = write_file(
      "deep.json", "{\"schema\": " + std::string(150000, '[') + std::string(150000, ']') + "}");
  expect_usage_error("--arch-file " + deep,
                     "arch file '" + deep + "' is not valid JSON: nested deeper than 256 levels");
  expect_usage_error(
      "--arch h200 --measured " + deep,
      "measured file '" + deep + "' is not valid JSON: nested deeper than 256 levels");
}

// One schedule grammar for roofline --schedule and --exp schedule: (they took 1 to 3 numbers up
// to 2^20, and exactly 3 up to 1024); freq 0 emulates nothing, so 0,4,1 is refused.
TEST(CliRoofline, ScheduleGrammarIsShared) {
  expect_usage_error("--schedule 0,4,1", "--schedule 0,4,1: freq = 0 emulates nothing");
  auto r = run_cli("roofline --arch b200 --schedule 0 --json -");
  EXPECT_EQ(r.code, 0) << r.err;
  fa4sim::test::expect_refused("rescale --rows 8 --keys 256 --d 8 --exp schedule:0,4,1",
                               "--exp schedule: 0,4,1: freq = 0 emulates nothing");
  fa4sim::test::expect_refused("rescale --rows 8 --keys 256 --d 8 --exp schedule:3,4",
                               "--exp schedule: 3,4: res = 4 must be below freq = 3");
  fa4sim::test::expect_refused("rescale --rows 8 --keys 256 --d 8 --exp schedule:10,4,1,2",
                               "--exp schedule: expects freq[,res[,start_frg]]");
  EXPECT_EQ(run_cli("rescale --rows 8 --keys 256 --d 8 --exp schedule:10").code, 0);
}

TEST(CliRoofline, BadTileScheduleAndOthers) {
  expect_usage_error("--tile 0x128", "--tile M = 0 is out of range");
  expect_usage_error("--tile 128x0", "--tile N = 0 is out of range");
  expect_usage_error("--tile 128", "--tile expects MxN");
  expect_usage_error("--schedule 3,4", "res = 4 must be below freq = 3");
  expect_usage_error("--schedule 10,4,1,2", "expects freq[,res[,start_frg]]");
  expect_usage_error("--schedule -1", "--schedule freq = -1 is out of range");
  expect_usage_error("--tile 128x100 --schedule 10,4,1", "row width 100");
  expect_usage_error("--emu-fraction 1.5", "outside [0, 1]");
  expect_usage_error("--emu-fraction nan", "must be finite");
  expect_usage_error("--dtype fp5", "unknown --dtype 'fp5'");
  expect_usage_error("--arch h200 --dtype fp4", "no tile to model");
  expect_usage_error("--direction sideways", "unknown --direction");
  expect_usage_error("--degree 6", "--degree = 6 is out of range");
  expect_usage_error("--arch a100 --dtype fp8", "a100 fwd fp8");
  expect_usage_error("--dtype fp8 --direction bwd", "no tile to model");
  expect_usage_error("--json /nonexistent-dir/out.json", "does not exist");
}

// ---- `fa4sim report` section

TEST(CliRoofline, ReportSectionWritesJsonAndFiguresOrSaysWhyNot) {
  const auto dir = temp_dir("roofline-report");
  auto r = run_cli("report --only roofline --out " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const json rep = json::parse(fa4sim::test::slurp((dir / "roofline.json").string()));
  EXPECT_EQ(rep["command"], "roofline");
  for (const auto& p : rep["results"]["published"]) EXPECT_TRUE(p["match"].get<bool>()) << p.dump();
  EXPECT_FALSE(rep["results"]["excess_investigation"]["finding"].get<std::string>().empty());
  const std::string md = fa4sim::test::slurp((dir / "report.md").string());
  EXPECT_NE(md.find("## Roofline"), std::string::npos);
  EXPECT_NE(md.find("Investigation: \"shared memory and exp exceed MMA compute by 25-60 %\""),
            std::string::npos);
  if (md.find("![T_exp/T_mma vs d](roofline_exp_over_mma.png)") != std::string::npos) {
    // Figures were linked: they must exist and be PNGs.
    for (const char* png : {"roofline_exp_over_mma.png", "roofline_pipe_model.png"}) {
      const std::string bytes = fa4sim::test::slurp((dir / png).string());
      ASSERT_GT(bytes.size(), 8u) << png;
      EXPECT_EQ(bytes.substr(1, 3), "PNG") << png;
    }
  } else {
    EXPECT_NE(md.find("no python3 with matplotlib was found"), std::string::npos) << md;
  }
}
