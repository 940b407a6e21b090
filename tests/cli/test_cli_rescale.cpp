// `fa4sim rescale`: every bad input of the issue gets "fa4sim: error: <what> (<hint>)" and exit 2
// (no report written); the handled edge cases (ragged block, partial warp) say how they are
// handled; the JSON has the fields the issue lists.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "fa4sim/util/npy.h"

namespace fa4sim {
namespace {

using test::run_cli;

const std::string kSmall = "rescale --rows 64 --keys 1024 --d 16 ";

void expect_usage_error(const std::string& args, const std::string& needle) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
  EXPECT_TRUE(r.out.empty()) << "no partial report on stdout: " << r.out;
}

TEST(CliRescale, BadTau) {
  expect_usage_error(kSmall + "--tau -1", "negative");
  expect_usage_error(kSmall + "--tau nan", "--tau");
  expect_usage_error(kSmall + "--tau 0,x", "--tau");
  expect_usage_error(kSmall + "--tau inf", "--tau");
}

TEST(CliRescale, BadBlock) {
  expect_usage_error(kSmall + "--block 0", "--block");
  expect_usage_error(kSmall + "--block 2048", "larger than --keys");
  expect_usage_error(kSmall + "--exp schedule:10,4,1 --block 100", "multiple of 32");
}

TEST(CliRescale, UnknownDtypeDistExp) {
  expect_usage_error(kSmall + "--dtype e4m4", "did you mean 'e4m3'");
  expect_usage_error(kSmall + "--dist gaussian:1", "unknown --dist");
  expect_usage_error(kSmall + "--dist normal", "SIGMA");
  expect_usage_error(kSmall + "--dist rise:x", "rise");
  expect_usage_error(kSmall + "--exp emu7", "unknown --exp");
  expect_usage_error(kSmall + "--order sideways", "unknown --order");
  expect_usage_error(kSmall + "--rng mt:1", "unknown --rng");
  expect_usage_error(kSmall + "--v-dist cauchy", "--v-dist");
  expect_usage_error(kSmall + "--seeds 0", "--seeds");
}

TEST(CliRescale, SafetyCheckRefusesAndExplains) {
  const auto r = run_cli(kSmall + "--tau 4 --dtype e4m3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("2^12 = 4096"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("448"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("below 0.8074"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--allow-saturation"), std::string::npos) << r.err;
  // The article's user example: tau 8 with e4m3 (max_offset 8 by default) is refused too.
  EXPECT_EQ(run_cli(kSmall + "--tau 8 --dtype e4m3").code, 2);
  // Allowed: runs, counts saturation, reports the failed check in JSON.
  const auto ok =
      run_cli(kSmall + "--tau 4 --dtype e4m3 --dist peaked --allow-saturation --json -");
  ASSERT_EQ(ok.code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  const auto& run = j["results"]["runs"][0];
  EXPECT_EQ(run["safe"], false);
  EXPECT_GT(run["saturated"].get<double>(), 0);
  EXPECT_EQ(j["results"]["safety"]["allow_saturation"], true);
  EXPECT_EQ(j["results"]["safety"]["checks"][0]["safe"], false);
}

TEST(CliRescale, JsonFieldsAndSeedStatistics) {
  const auto r = run_cli(kSmall + "--dist normal:1.5,rise:24 --seeds 3 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"]["runs"].size(), 4u);  // 2 dists x 2 taus x 1 dtype
  for (const auto& run : j["results"]["runs"]) {
    for (const char* k :
         {"dist", "tau", "dtype", "max_offset", "block", "rows", "keys", "d", "seeds"})
      EXPECT_TRUE(run.contains(k)) << k;
    for (const char* k : {"rows_pct", "warps_pct", "rel_l2", "max_abs", "lse_max_err", "saturated",
                          "saturated_pct"}) {
      ASSERT_TRUE(run[k].is_object()) << k;
      EXPECT_LE(run[k]["min"].get<double>(), run[k]["mean"].get<double>()) << k;
      EXPECT_GE(run[k]["max"].get<double>(), run[k]["mean"].get<double>()) << k;
      EXPECT_GE(run[k]["sd"].get<double>(), 0.0) << k;
    }
  }
  EXPECT_TRUE(j["results"]["oneshot"].is_object());
  // Rising scores rescale more than i.i.d. ones at tau 0 (forward order).
  EXPECT_GT(j["results"]["runs"][2]["rows_pct"]["mean"].get<double>(),
            j["results"]["runs"][0]["rows_pct"]["mean"].get<double>());
}

TEST(CliRescale, RaggedBlockAndPartialWarpAreExplained) {
  const auto r = run_cli("rescale --rows 40 --keys 1000 --block 128 --d 8 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["results"]["blocks"], 8);  // 7 full blocks + 104 keys
  EXPECT_EQ(j["results"]["warps"], 2);   // 32 + a partial warp of 8 rows
  const auto t = run_cli("rescale --rows 40 --keys 1000 --block 128 --d 8");
  EXPECT_NE(t.out.find("ragged last block: 104 keys"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("the last warp has only 8 rows and votes once"), std::string::npos) << t.out;
}

TEST(CliRescale, ReportPathCheckedBeforeWork) {
  const auto r = run_cli(kSmall + "--json /nonexistent-dir/x.json");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// ---- file:PATH.npy

std::string write_bytes(const std::filesystem::path& dir, const std::string& name,
                        const std::vector<uint8_t>& b) {
  const std::string p = (dir / name).string();
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  return p;
}

// Scores whose scaled value float32 cannot resolve: refused, naming which value overflows what
// (they used to give rel-L2 1, LSE inf, every metric 0, or an LSE "error" of one ulp at 1e30).
TEST(CliRescale, OverflowingScoresAreRefused) {
  const std::string base = "rescale --rows 8 --keys 256 --d 8 --tau 0 ";
  expect_usage_error(base + "--softmax-scale 1e38", "--softmax-scale 1e+38 x log2(e) reach");
  expect_usage_error(base + "--dist rise:1e39", "overflows float32");
  expect_usage_error(base + "--dist normal:1e39", "overflows float32");
  expect_usage_error(base + "--dist rise:1e30", "beyond 2^24");
  // The bound is 2^24 in log2 units: 1e6 is far inside and runs.
  const auto ok = run_cli(base + "--dist rise:1e6 --json -");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// A generated score that overflows to -inf is an overflow, not a mask: rise:-1e308 is refused
// like rise:1e308 (it ran with every key but the first masked, rel-L2 0).
TEST(CliRescale, NegativeOverflowIsRefusedLikePositive) {
  const std::string base = "rescale --rows 8 --keys 256 --d 8 --tau 0 ";
  expect_usage_error(base + "--dist rise:-1e308", "overflows float32");
  expect_usage_error(base + "--dist rise:1e308", "overflows float32");
}

TEST(CliRescale, FullyMaskedRowIsRefused) {
  const auto dir = test::temp_dir("rescale-masked");
  std::vector<float> s(size_t(4) * 256, 1.0f);
  for (size_t k = 0; k < 256; ++k) s[2 * 256 + k] = -INFINITY;  // row 2: every key masked
  const std::string p = (dir / "masked.npy").string();
  write_npy_f32(p, {4, 256}, s);
  expect_usage_error("rescale --d 8 --tau 0 --dist file:" + p, "every key of row 2 is -inf");
  std::vector<float> all(size_t(4) * 256, -INFINITY);
  write_npy_f32(p, {4, 256}, all);
  expect_usage_error("rescale --d 8 --tau 0 --dist file:" + p, "every key of row 0 is -inf");
  std::filesystem::remove_all(dir);
}

// The .npy file messages of --dist file: name only what this reader takes (float32; the float64
// message offered float16, which it then refused) and only the options that were given.
TEST(CliRescale, NpyMessagesNameWhatApplies) {
  const auto dir = test::temp_dir("rescale-npy-msg");
  std::vector<float> s(size_t(8) * 256, 1.0f);
  auto f8 = encode_npy(NpyType::f32, {8, 256}, s.data(), s.size() * 4);
  std::string h(f8.begin(), f8.end());
  h.replace(h.find("<f4"), 3, "<f8");
  std::vector<uint8_t> b(h.begin(), h.end());
  b.insert(b.end(), b.end() - long(s.size() * 4), b.end());
  auto r = test::expect_refused("rescale --dist file:" + write_bytes(dir, "f8.npy", b),
                                "has element type '<f8'; expected float32 ('<f4')");
  EXPECT_EQ(r.err.find("float16"), std::string::npos) << r.err;
  const std::string good =
      write_bytes(dir, "good.npy", encode_npy(NpyType::f32, {8, 256}, s.data(), s.size() * 4));
  r = test::expect_refused("rescale --d 8 --tau 0 --dist file:" + good + " --rows 4",
                           "has shape (8, 256) but --rows 4 was given");
  EXPECT_EQ(r.err.find("were given"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(CliRescale, NpyScores) {
  const auto dir = test::temp_dir("rescale-npy");
  const int rows = 32, keys = 512;
  std::vector<float> s(size_t(rows) * keys);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < keys; ++k)
      s[size_t(r) * keys + size_t(k)] = float(k) / 16.0f + float(r % 3);
  const auto good =
      encode_npy(NpyType::f32, {uint64_t(rows), uint64_t(keys)}, s.data(), s.size() * 4);
  const std::string gp = write_bytes(dir, "good.npy", good);
  // A valid file: shape taken from it; auto order = the kernel's reverse order, so rising scores
  // never rescale (the max comes first); forced forward, every block raises the max.
  auto r = run_cli("rescale --d 8 --dist file:" + gp + " --tau 0 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["results"]["runs"][0]["order"], "reverse");
  EXPECT_EQ(j["results"]["runs"][0]["rows"], rows);
  EXPECT_EQ(j["results"]["runs"][0]["rows_pct"].get<double>(), 0.0);
  r = run_cli("rescale --d 8 --dist file:" + gp + " --tau 0 --order forward --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["results"]["runs"][0]["rows_pct"].get<double>(), 100.0);

  // Wrong dtype (float64), wrong shape (1-D, 3-D), big-endian, truncated, shape vs --rows.
  std::vector<double> s64(s.begin(), s.end());
  auto f8 = encode_npy(NpyType::f32, {uint64_t(rows), uint64_t(keys)}, s.data(), s.size() * 4);
  {
    std::string h(f8.begin(), f8.end());
    h.replace(h.find("<f4"), 3, "<f8");
    std::vector<uint8_t> b(h.begin(), h.end());
    b.insert(b.end(), b.end() - long(s.size() * 4), b.end());  // double the data length
    expect_usage_error("rescale --dist file:" + write_bytes(dir, "f8.npy", b), "f8");
  }
  expect_usage_error(
      "rescale --dist file:" +
          write_bytes(dir, "1d.npy",
                      encode_npy(NpyType::f32, {uint64_t(s.size())}, s.data(), s.size() * 4)),
      "1d.npy");
  expect_usage_error(
      "rescale --dist file:" +
          write_bytes(dir, "3d.npy",
                      encode_npy(NpyType::f32, {2, 16, uint64_t(keys)}, s.data(), s.size() * 4)),
      "3d.npy");
  {
    std::string h(good.begin(), good.end());
    h.replace(h.find("<f4"), 3, ">f4");
    expect_usage_error("rescale --dist file:" +
                           write_bytes(dir, "be.npy", std::vector<uint8_t>(h.begin(), h.end())),
                       "be.npy");
  }
  {
    std::vector<uint8_t> t(good.begin(), good.end() - 100);
    expect_usage_error("rescale --dist file:" + write_bytes(dir, "trunc.npy", t), "trunc.npy");
  }
  expect_usage_error("rescale --rows 64 --dist file:" + gp, "--rows");
  expect_usage_error("rescale --dist file:" + (dir / "missing.npy").string(), "missing.npy");
  {
    auto bad = s;
    bad[5] = std::nanf("");
    expect_usage_error("rescale --dist file:" +
                           write_bytes(dir, "nan.npy",
                                       encode_npy(NpyType::f32, {uint64_t(rows), uint64_t(keys)},
                                                  bad.data(), bad.size() * 4)),
                       "score [0, 5]");
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fa4sim
