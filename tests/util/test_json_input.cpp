// Tests for json_input.h: the one reader of JSON input files (Note [JSON input depth]).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli_helpers.h"
#include "fa4sim/analysis/roofline.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/report/baseline.h"
#include "fa4sim/report/published.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"

namespace fa4sim {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonInput, NestingDepthCountsBracketsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0u);
  EXPECT_EQ(json_nesting_depth("{\"a\": [1, {\"b\": []}]}"), 4u);
  EXPECT_EQ(json_nesting_depth("[\"[[[[\", \"\\\"[[\"]"), 1u);
  EXPECT_EQ(json_nesting_depth(nested(10)), 10u);
  EXPECT_EQ(json_nesting_depth(nested(100000), 256), 257u) << "stops counting past the limit";
}

TEST(JsonInput, DeepNestingIsRefusedBeforeParsing) {
  // 150,000 nested arrays under an object key: parsed, then copied recursively, this overflowed
  // the stack; now it is refused with the file's name.
  const std::string text = "{\"results\": {\"x\": " + nested(150000) + "}}";
  try {
    parse_json_input(text, "baseline file 'b/formats.json' is not JSON");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "baseline file 'b/formats.json' is not JSON: nested deeper than 256 levels"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse_json_input(nested(kMaxJsonDepth), "p is not JSON").size(), 1u)
      << "the limit itself is fine";
}

TEST(JsonInput, FilesAreReadOrRefusedByName) {
  const auto dir = test::temp_dir("json-input");
  const std::string good = (dir / "good.json").string(), bad = (dir / "bad.json").string(),
                    deep = (dir / "deep.json").string();
  std::ofstream(good) << "{\"a\": 1}";
  std::ofstream(bad) << "{\"a\": ";
  std::ofstream(deep) << nested(100000);
  EXPECT_EQ(read_json_input(good, "arch file")["a"], 1);
  EXPECT_THROW(read_json_input(bad, "arch file"), Error);
  EXPECT_THROW(read_json_input(deep, "arch file"), Error);
  EXPECT_THROW(read_json_input(dir.string(), "arch file"), Error);
  EXPECT_THROW(read_json_input((dir / "none.json").string(), "arch file"), Error);
  EXPECT_TRUE(try_read_json_input(good).has_value());
  EXPECT_FALSE(try_read_json_input(bad).has_value());
  EXPECT_FALSE(try_read_json_input(deep).has_value());
  EXPECT_FALSE(try_read_json_input(dir.string()).has_value());
  std::filesystem::remove_all(dir);
}

// Every JSON reader on randomly damaged copies of fa4sim's own JSON files (a bounded, seeded
// mutation run; tests/fuzz/run_json_fuzz.sh is the long libFuzzer one): each returns or throws
// fa4sim::Error, never anything else (a json::type_error would reach the user as "a bug").
TEST(JsonInput, DamagedInputsOnlyThrowErrors) {
  std::vector<std::string> seeds = {
      "{\"schema\": \"fa4sim/bench-exp-v1\", \"device\": \"d\", \"arch\": \"h200\", \"points\": "
      "[{\"degree\": 3, \"f\": 0.5, \"exps_per_clk_sm\": 16}]}",
      "{\"schema\": \"fa4sim/report-v1\", \"results\": {\"a\": [1, 2.5, \"nan\", {\"b_stderr\": 0.1, \"b\": 3}]}}"};
  const std::string data = std::string(FA4SIM_SOURCE_DIR) + "/data";
  for (const char* dir : {"/archs", "/published", "/schedule"})
    for (const auto& e : std::filesystem::directory_iterator(data + dir))
      if (e.path().extension() == ".json" && e.file_size() < 20000)  // small files: more runs
        seeds.push_back(test::slurp(e.path().string()));
  seeds.push_back(test::slurp(data + "/exp_pipe_model.json"));
  const std::vector<std::string> tokens = {"[",      "]",       "{",     "}",        "\"", ",",
                                           ":",      "null",    "true",  "-1",       "0",  "1e999",
                                           "1e-999", "\"nan\"", "\"x\"", "[[[[[[[[", "{}", "[]"};
  std::mt19937_64 rng(1);
  const auto pick = [&](size_t n) { return size_t(rng() % std::max<size_t>(n, 1)); };
  size_t runs = 0, parsed = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    std::string t = seeds[pick(seeds.size())];
    for (int m = 0, edits = 1 + int(pick(4)); m < edits; ++m) {
      const size_t at = pick(t.size() + 1);
      switch (pick(4)) {
        case 0: t.insert(at, tokens[pick(tokens.size())]); break;
        case 1: t.erase(at, pick(16)); break;
        case 2:
          if (at < t.size()) t[at] = char(rng());
          break;
        default: t.insert(at, t.substr(pick(t.size()), pick(64))); break;
      }
    }
    ++runs;
    try {
      json j;
      try {
        j = parse_json_input(t, "input is not JSON");
      } catch (const Error&) {
        continue;
      }
      ++parsed;
      for (int reader = 0; reader < 7; ++reader) {
        try {
          if (reader == 0) (void)parse_arch(j, "in");
          if (reader == 1) (void)parse_measured(j, "in");
          if (reader == 2) (void)parse_pipe_model(j, "in");
          if (reader == 3) (void)PublishedValues::parse(j, "in");
          if (reader == 4) (void)compare_results(j, j);
          if (reader == 5) (void)parse_schedule_spec(j, "in");
          if (reader == 6)
            for (const auto& e : j.is_array() ? j : json::array({j}))
              (void)schedule_input_from_json(e, ScheduleInput{}, "in");
        } catch (const Error&) {}
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "reader threw " << e.what() << " on: " << t.substr(0, 300);
      break;
    }
  }
  std::printf("%zu damaged inputs, %zu of them valid JSON\n", runs, parsed);
  EXPECT_GT(runs, 100u);
}

}  // namespace
}  // namespace fa4sim
