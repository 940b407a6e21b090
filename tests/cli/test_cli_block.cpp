// `fa4sim block`: encode / decode round trip through .npy files, the JSON summary, and every bad
// input (unknown format or rule, a block size that does not divide the row, a scale format that
// cannot hold the rule's result, bad --tensor-scale, missing files): exit code 2 naming the option.
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "fa4sim/util/npy.h"

using fa4sim::test::expect_refused;
using fa4sim::test::run_cli;
using fa4sim::test::temp_dir;

namespace {

std::string write_input(const std::filesystem::path& dir, uint64_t rows, uint64_t cols) {
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((int(i * 37) % 101) - 50) / 7.0f;
  const std::string p = (dir / "x.npy").string();
  fa4sim::write_npy_f32(p, {rows, cols}, x);
  return p;
}

TEST(CliBlock, EncodeDecodeRoundTrip) {
  const auto dir = temp_dir("block");
  const std::string x = write_input(dir, 4, 64);
  const std::string c = (dir / "c.npy").string(), s = (dir / "s.npy").string();
  const std::string d = (dir / "d.npy").string(), d2 = (dir / "d2.npy").string();
  for (const char* fmt : {"mxfp8", "mxfp8-e5m2", "mxfp6", "mxfp6-e3m2", "mxfp4", "nvfp4"}) {
    auto r = run_cli(std::string("block --format ") + fmt + " --in " + x + " --codes-out " + c +
                     " --scales-out " + s + " --decoded-out " + d + " --json -");
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["command"], "block");
    EXPECT_EQ(j["results"]["summary"]["elements"], 256);
    EXPECT_GT(j["results"]["summary"]["rel_rms_err"].get<double>(), 0.0);
    EXPECT_LT(j["results"]["summary"]["rel_rms_err"].get<double>(), 0.25) << fmt;
    const auto codes = fa4sim::read_npy(c, true), scales = fa4sim::read_npy(s, true);
    EXPECT_EQ(codes.shape, (std::vector<uint64_t>{4, 64}));
    EXPECT_EQ(scales.shape, (std::vector<uint64_t>{4, std::string(fmt) == "nvfp4" ? 4u : 2u}));
    r = run_cli(std::string("block --format ") + fmt + " --decode --codes " + c + " --scales " + s +
                " --decoded-out " + d2);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(fa4sim::read_npy(d).raw, fa4sim::read_npy(d2).raw) << fmt;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliBlock, BadInputNamesTheOption) {
  const auto dir = temp_dir("block-bad");
  const std::string x = write_input(dir, 2, 48);
  const std::string in = " --in " + x;
  expect_refused("block --format mxfp5" + in, "unknown --format 'mxfp5'");
  expect_refused("block --rule flor" + in, "unknown --rule 'flor'");
  expect_refused("block --elem e4m4" + in, "unknown dtype 'e4m4'");
  expect_refused("block --elem bf16" + in, "--elem bf16");
  expect_refused("block --format mxfp4" + in, "--block 32 does not divide the row length 48");
  expect_refused("block --format mxfp4 --block 0" + in, "--block");
  expect_refused("block --format mxfp4 --scale-format e4m3" + in,
                 "--scale-format e4m3 cannot hold the 'floor' rule");
  expect_refused("block --format nvfp4 --scale-format e8m0" + in,
                 "--scale-format e8m0 cannot hold the 'nearest' rule");
  expect_refused("block --format mxfp4 --block 16 --tensor-scale 0.5" + in,
                 "--tensor-scale is for the 'nearest' rule");
  expect_refused("block --format nvfp4 --tensor-scale -1" + in, "--tensor-scale");
  expect_refused("block --format nvfp4", "nothing to encode");
  expect_refused("block --format nvfp4 --decode --codes " + x,
                 "--decode needs --codes and --scales");
  expect_refused("block --format nvfp4 --decode --codes " + x + " --scales " + x, "must be uint8");
  expect_refused("block --format nvfp4 --in " + (dir / "missing.npy").string(), "missing.npy");
  // E2M1 codes are 4 bits: 0x1F in a byte is not a code (it used to decode as -6)
  const std::string c = (dir / "c.npy").string(), sc = (dir / "s.npy").string();
  std::vector<uint8_t> codes(32, 0x01), scales(1, 127);
  codes[5] = 0x1F;
  fa4sim::write_npy(c, fa4sim::NpyType::u8, {1, 32}, codes.data(), codes.size());
  fa4sim::write_npy(sc, fa4sim::NpyType::u8, {1, 1}, scales.data(), scales.size());
  expect_refused("block --format mxfp4 --decode --codes " + c + " --scales " + sc,
                 "--codes holds 0x1F at index 5, above e2m1's largest code 0xF");
  std::filesystem::remove_all(dir);
}

// The attention and rescale commands take per-tensor dtypes only: the MX element and scale
// formats are not among them.
TEST(CliBlock, MxFormatsAreNotAttentionDtypes) {
  expect_refused("attention --dtype e2m1", "e2m1");
  expect_refused("rescale --dtype e8m0", "e8m0");
}

// `quantize` covers the MX formats; ieee overflow is refused for the formats without inf/NaN.
TEST(CliBlock, QuantizeMxFormats) {
  auto r = run_cli("quantize --dtype e2m1 --json - 5 7 nan -inf");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["results"]["values"][0]["bits"], "0x6");
  EXPECT_EQ(j["results"]["values"][1]["bits"], "0x7");
  EXPECT_EQ(j["results"]["values"][1]["saturated"], true);
  EXPECT_EQ(j["results"]["values"][2]["bits"], "0x7");
  EXPECT_EQ(j["results"]["values"][3]["bits"], "0xF");
  expect_refused("quantize --dtype e2m1 --overflow ieee 1", "e2m1 has no inf and no NaN");
  expect_refused("quantize --dtype e8m0 --rounding stochastic 1",
                 "stochastic rounding to the MX format e8m0");
  r = run_cli("quantize --dtype e8m0 --overflow ieee --json - 3 0 -1");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto k = nlohmann::json::parse(r.out);
  EXPECT_EQ(k["results"]["values"][0]["bits"], "0x81");
  EXPECT_EQ(k["results"]["values"][1]["bits"], "0xFF");
  r = run_cli("formats --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"e8m0\""), std::string::npos);
}

}  // namespace
