// `fa4sim fit` and `fa4sim exp2 --coeffs` from the command line: every bad input
// (exit 2, "fa4sim: error: <what> (<hint>)", nothing on stdout, no report file), the minimax
// report, and that `exp2 --coeffs` with upstream's coefficients reproduces `exp2 --degree`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;
using fa4sim::test::temp_dir;
using json = nlohmann::json;

namespace {

void expect_usage_error(const std::string& args, const std::string& needle) {
  fa4sim::test::expect_usage_error_without_report(args, needle);
}

TEST(CliFit, BadDegree) {
  expect_usage_error("fit --degree 0", "--degree = 0 is out of range (valid: 1..5)");
  expect_usage_error("fit --degree 6", "--degree = 6 is out of range (valid: 1..5)");
  expect_usage_error("fit --degree -1", "out of range");
  expect_usage_error("fit --degree 2.5", "--degree expects an integer");
  expect_usage_error("fit --degree x", "--degree expects a number, got 'x'");
}

TEST(CliFit, BadRange) {
  expect_usage_error("fit --range 8,-20", "--range is empty: LO = 8 is not below HI = -20");
  expect_usage_error("fit --range 1,1", "--range is empty");
  expect_usage_error("fit --range=-20,300", "leaves [-1022, 128]");
  expect_usage_error("fit --range 1", "--range expects LO,HI");
}

TEST(CliFit, UnknownObjective) {
  expect_usage_error("fit --objective bf16-identcal",
                     "unknown --objective 'bf16-identcal' (did you mean 'bf16-identical'?");
  expect_usage_error("fit --objective maxrel", "valid: fp32-maxrel, fp32-meanrel, bf16-identical");
}

// A polynomial far from 2^f on [0, 1) is refused: 1,3e38 overflowed the exponent splice and
// printed a max rel of 1.5e38 next to a mean rel of nan; 0,0 gave inf.
TEST(CliExp2Coeffs, PolynomialFarFromExp2IsRefused) {
  expect_usage_error("exp2 --coeffs 1,3e38",
                     "--coeffs: the polynomial is 2.93e+35 at f = 0.000976562, far from 2^f");
  expect_usage_error("exp2 --coeffs 0,0", "the polynomial is 0 at f = 0");
  expect_usage_error("exp2 --coeffs -1,-1", "far from 2^f");
}

// A folder is not a coefficient file (it read as "0 coefficients given"); a file whose number is
// followed by a NUL and more text is not read as the number.
TEST(CliExp2Coeffs, FolderAndNulInFileAreRefused) {
  const auto dir = temp_dir("fitcoeffs");
  expect_usage_error("exp2 --coeffs " + dir.string(),
                     "--coeffs: '" + dir.string() + "' is a directory");
  const auto f = dir / "nul.txt";
  std::ofstream(f, std::ios::binary) << std::string("1\n0.69\0junk\n", 12);
  expect_usage_error("exp2 --coeffs " + f.string(), "'0.69\\x00junk' is not a number");
  std::filesystem::remove_all(dir);
}

TEST(CliExp2Coeffs, Malformed) {
  expect_usage_error("exp2 --coeffs 1", "--coeffs: 1 coefficient given (give 2 to 6");
  expect_usage_error("exp2 --coeffs 1,2,3,4,5,6,7", "--coeffs: 7 coefficients given");
  expect_usage_error("exp2 --coeffs 1,nan", "coefficient 1 is 'nan', not finite");
  expect_usage_error("exp2 --coeffs 1,0.5,-inf", "coefficient 2 is '-inf', not finite");
  expect_usage_error("exp2 --coeffs 1,1e39", "overflows float32");
  expect_usage_error("exp2 --coeffs 1,abc", "'abc' is not a number");
  expect_usage_error("exp2 --coeffs 1,,0.5", "an empty field");
  expect_usage_error("exp2 --coeffs 1,0.5,", "an empty field");
  expect_usage_error("exp2 --coeffs ''", "--coeffs needs c0,c1,... or a file name");
  expect_usage_error("exp2 --coeffs /nonexistent/coeffs.txt",
                     "cannot read '/nonexistent/coeffs.txt'");
  expect_usage_error("exp2 --coeffs 1,0.7 --degree 1", "--coeffs sets the degree");
  const auto dir = temp_dir("fitcoeffs");
  const auto f = dir / "c.txt";
  std::ofstream(f) << "# too many\n1 2 3 4 5 6 7\n";
  expect_usage_error("exp2 --coeffs " + f.string(), "7 coefficients given");
  std::ofstream(f) << "1\n0.69\nnan\n";
  expect_usage_error("exp2 --coeffs " + f.string(), "not finite");
  std::filesystem::remove_all(dir);
}

TEST(CliExp2Coeffs, UpstreamCoefficientsReproduceDegree) {
  // The same polynomial through --coeffs (a file with a comment and a hex float) and --degree:
  // the same statistics (sampled, the default job on fewer samples).
  const auto dir = temp_dir("fitsame");
  const auto f = dir / "c.txt";
  std::ofstream(f) << "# upstream POLY_EX2[3]\n1\n0x1.63ea32p-1 # 0.695146143436431884765625\n"
                      "0.227564394474029541015625, 0.077119089663028717041015625\n";
  auto a = run_cli("exp2 --coeffs " + f.string() + " --samples 65536 --json -");
  auto b = run_cli("exp2 --degree 3 --samples 65536 --json -");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const json ja = json::parse(a.out), jb = json::parse(b.out);
  EXPECT_EQ(ja["results"]["function"], "ex2_emu_poly");
  EXPECT_EQ(ja["params"]["coeffs"].size(), 4u);
  EXPECT_EQ(ja["results"]["degrees"], jb["results"]["degrees"]);
  // A different polynomial gives different statistics.
  auto c = run_cli("exp2 --coeffs 1,0.6958,0.2261,0.0780 --samples 65536 --json -");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(json::parse(c.out)["results"]["degrees"], jb["results"]["degrees"]);
  std::filesystem::remove_all(dir);
}

TEST(CliFit, MinimaxOnlyReport) {
  auto r = run_cli("fit --degree 3 --fix-c0 --minimax-only --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "fa4sim/report-v1");
  EXPECT_EQ(j["command"], "fit");
  EXPECT_EQ(j["params"]["degree"], 3);
  EXPECT_EQ(j["params"]["objective"], "fp32-maxrel");
  const json& m = j["results"]["minimax"];
  ASSERT_EQ(m["coeffs"].size(), 4u);
  EXPECT_EQ(std::stod(m["coeffs"][0].get<std::string>()), 1.0);
  // Upstream's float32 fit reaches 8.77e-5; the real-arithmetic minimax must be below it.
  EXPECT_LT(m["max_rel"].get<double>(), 8.77e-5);
  EXPECT_GT(m["max_rel"].get<double>(), 1e-5);
}

}  // namespace
