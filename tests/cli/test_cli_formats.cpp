// `fa4sim formats` and `fa4sim quantize`: outputs, JSON schema, and every bad input
// (unknown dtype; nan / inf / 1e999 / abc in VALUES and on stdin; --binary
// stdin whose length is not a multiple of 4): clear error, exit code 2.
#include <cstring>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;
using fa4sim::test::slurp;
using fa4sim::test::temp_dir;

namespace {

std::string write_temp(const std::string& name, const std::string& content) {
  const auto path = temp_dir("formats") / name;
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

void expect_usage_error(const fa4sim::test::CliResult& r, const std::string& what) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "wanted '" << what << "' in: " << r.err;
  EXPECT_TRUE(r.out.empty()) << "no partial report on error: " << r.out;
}

}  // namespace

// ---- fa4sim formats
TEST(CliFormats, TableAndJson) {
  auto r = run_cli("formats");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s :
       {"e4m3", "e5m2", "bf16", "fp16", "fp32", "448", "57344", "65504", "8.807355"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing in:\n" << r.out;
  auto j = run_cli("formats --json -");
  ASSERT_EQ(j.code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["command"], "formats");
  const auto& fs = doc["results"]["formats"];
  ASSERT_EQ(fs.size(), 9u);  // fp32, bf16, fp16, e4m3, e5m2, e2m1, e2m3, e3m2, e8m0
  for (const auto& f : fs)
    for (const char* k : {"name", "bits", "exponent_bits", "mantissa_bits", "bias", "max_finite",
                          "min_normal", "min_subnormal", "epsilon", "log2_max", "has_inf"})
      EXPECT_TRUE(f.contains(k)) << k;
  const auto& e4 = fs[3];
  EXPECT_EQ(e4["name"], "e4m3");
  EXPECT_EQ(e4["max_finite"], 448.0);
  EXPECT_EQ(e4["has_inf"], false);
  EXPECT_NEAR(e4["log2_max"].get<double>(), 8.807354922057604, 1e-12);
}

// ---- fa4sim quantize: values, flags, JSON
TEST(CliQuantize, ValuesWithNanAndInfAreValid) {
  auto r = run_cli("quantize --dtype e4m3 --json - 1.0 500 nan inf -inf 1e-4");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& v = doc["results"]["values"];
  ASSERT_EQ(v.size(), 6u);
  for (const char* k : {"input", "dtype", "overflow", "bits", "decoded", "abs_err", "rel_err",
                        "saturated", "flushed"})
    EXPECT_TRUE(v[0].contains(k)) << k;
  EXPECT_EQ(v[0]["bits"], "0x38");
  EXPECT_EQ(v[0]["decoded"], 1.0);
  EXPECT_EQ(v[1]["bits"], "0x7E");  // 500 saturates to 448
  EXPECT_EQ(v[1]["decoded"], 448.0);
  EXPECT_EQ(v[1]["saturated"], true);
  EXPECT_EQ(v[2]["input"], "nan");
  EXPECT_EQ(v[2]["bits"], "0x7F");  // canonical NaN
  EXPECT_EQ(v[2]["decoded"], "nan");
  EXPECT_EQ(v[3]["bits"], "0x7E");  // +inf -> max under satfinite
  EXPECT_EQ(v[3]["saturated"], true);
  EXPECT_EQ(v[4]["bits"], "0xFE");
  EXPECT_EQ(v[5]["bits"], "0x00");  // 1e-4 < 2^-10: flushed
  EXPECT_EQ(v[5]["flushed"], true);
  EXPECT_EQ(doc["params"]["dtype"], "e4m3");
  EXPECT_EQ(doc["params"]["overflow"], "satfinite");
}

TEST(CliQuantize, IeeeOverflowAndHumanTable) {
  auto r = run_cli("quantize --dtype e5m2 --overflow ieee 1e6 -1e6 1.5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0x7C"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0xFC"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overflow -> inf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 01111 10"), std::string::npos) << "binary fields of 1.5:\n" << r.out;
  auto e = run_cli("quantize --dtype e4m3 --overflow ieee --json - 465");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out)["results"]["values"][0]["bits"], "0x7F");
}

TEST(CliQuantize, StochasticIsSeededAndReproducible) {
  // 1.03 lies between the e4m3 neighbours 1.0 (0x38) and 1.125 (0x39), 0.24 of the way up:
  // stochastic rounding goes up with probability 0.24, round to nearest never does.
  std::string values;
  for (int i = 0; i < 64; ++i) values += " 1.03";
  const std::string args = "quantize --dtype e4m3 --rounding stochastic --seed 7 --json -" + values;
  auto a = run_cli(args), b = run_cli(args);
  ASSERT_EQ(a.code, 0) << a.err;
  const auto va = nlohmann::json::parse(a.out)["results"]["values"];
  const auto vb = nlohmann::json::parse(b.out)["results"]["values"];
  EXPECT_EQ(va, vb);
  int up = 0;
  for (const auto& v : va) {
    EXPECT_TRUE(v["bits"] == "0x38" || v["bits"] == "0x39") << v;
    up += v["bits"] == "0x39";
  }
  // Binomial(64, 0.24): mean 15.4, s.d. 3.4; the bounds are 3 s.d. (the run is deterministic:
  // seed 7 gives one fixed count, and both bounds fail if SR became round to nearest or round up).
  EXPECT_GE(up, 5) << "stochastic rounding never rounded up: is it round to nearest?";
  EXPECT_LE(up, 26);
  EXPECT_EQ(nlohmann::json::parse(a.out)["params"]["seed"], 7);
  auto c = run_cli("quantize --dtype e4m3 --rounding stochastic --seed 8 --json -" + values);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(nlohmann::json::parse(c.out)["results"]["values"], va) << "the seed changes the stream";
}

TEST(CliQuantize, StdinTextAndBinary) {
  const std::string text = write_temp("v.txt", "# P values\n1.0, 2.0\n  nan inf\n\n-0.5\n");
  auto r = run_cli("quantize --dtype bf16 --stdin --json -", text);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto v = nlohmann::json::parse(r.out)["results"]["values"];
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[2]["bits"], "0x7FFF");
  EXPECT_EQ(v[3]["bits"], "0x7F7F");  // satfinite inf
  EXPECT_EQ(v[4]["bits"], "0xBF00");
  const float xs[3] = {1.0f, 448.0f, -3.0f};
  const std::string bin =
      write_temp("v.bin", std::string(reinterpret_cast<const char*>(xs), sizeof xs));
  auto b = run_cli("quantize --dtype e4m3 --stdin --binary --json -", bin);
  ASSERT_EQ(b.code, 0) << b.err;
  const auto vb = nlohmann::json::parse(b.out)["results"]["values"];
  ASSERT_EQ(vb.size(), 3u);
  EXPECT_EQ(vb[1]["bits"], "0x7E");
  EXPECT_EQ(vb[2]["bits"], "0xC4");
}

TEST(CliQuantize, BinaryOutWritesCodes) {
  const auto dir = temp_dir("formats-out");
  const std::string out = (dir / "codes.bin").string();
  auto r = run_cli("quantize --dtype fp16 --binary-out " + out + " 1 -2 65520");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string codes = slurp(out);
  ASSERT_EQ(codes.size(), 6u);
  uint16_t c[3];
  std::memcpy(c, codes.data(), 6);
  EXPECT_EQ(c[0], 0x3C00);
  EXPECT_EQ(c[1], 0xC000);
  EXPECT_EQ(c[2], 0x7BFF);  // satfinite
}

// ---- --stdin streams: memory does not grow with the number of values
namespace {
// sh -c 'ulimit -v KB; fa4sim ARGS < file': an address-space limit far below what holding the
// values (let alone their JSON) would need.
fa4sim::test::CliResult run_limited(const std::string& args, const std::string& in, int kb) {
  return run_cli("quantize " + args, in, kb);
}
}  // namespace

TEST(CliQuantize, StdinStreamsTenMillionValuesInFlatMemory) {
  const auto dir = temp_dir("formats-stream");
  constexpr size_t kN = 10'000'000;
  {
    std::ofstream t(dir / "ones.txt", std::ios::binary);  // one line, as `print('1 ' * N)` makes
    std::string line;
    for (size_t i = 0; i < 4096; ++i) line += "1 ";
    for (size_t i = 0; i < kN / 4096; ++i) t << line;
    for (size_t i = 0; i < kN % 4096; ++i) t << "1 ";
    t << "\n";
    std::vector<float> xs(kN);
    for (size_t i = 0; i < kN; ++i) xs[i] = float(i % 1000) * 0.5f - 250.0f;
    std::ofstream(dir / "xs.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(xs.data()), std::streamsize(kN * 4));
  }
  // 150 MB of address space: 10M values as text take 20 MB, their old in-memory JSON 16 GB.
  auto t = run_limited("--dtype e4m3 --stdin", (dir / "ones.txt").string(), 150000);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("10000000 values -> e4m3"), std::string::npos) << t.out;
  auto b = run_limited("--dtype bf16 --stdin --binary --binary-out " + (dir / "codes.bin").string(),
                       (dir / "xs.bin").string(), 150000);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("10000000 values -> bf16"), std::string::npos) << b.out;
  const std::string codes = slurp((dir / "codes.bin").string());
  ASSERT_EQ(codes.size(), 2 * kN);
  uint16_t last;  // value kN-1: (9999999 % 1000) * 0.5 - 250 = 249.5, halfway between bf16
  std::memcpy(&last, codes.data() + 2 * (kN - 1), 2);  // 249 (0x4379) and 250 (0x437A): to even
  EXPECT_EQ(last, 0x437A);
  std::filesystem::remove_all(dir);
}

TEST(CliQuantize, StdinJsonIsStreamedAndComplete) {
  const auto dir = temp_dir("formats-stream");
  {
    std::ofstream t(dir / "v.txt");
    for (int i = 0; i < 200000; ++i)
      t << (i % 7 == 0 ? "nan" : std::to_string(i % 500)) << (i % 10 ? ' ' : '\n');
  }
  const std::string js = (dir / "r.json").string();
  auto r = run_limited("--dtype e4m3 --stdin --json " + js, (dir / "v.txt").string(), 150000);
  ASSERT_EQ(r.code, 0) << r.err;
  // The whole file is parsed (it must be JSON), but of results.values only the entries checked
  // below are kept, the others counted: the full tree of 200000 entries (52 MB of text) took
  // most of this test's CPU in its -Og build.
  size_t entries = 0;
  std::string key2;  // the last key at depth 2 (under "results")
  const auto keep = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::key && depth == 2) key2 = parsed.get<std::string>();
    if (event == E::object_start && depth == 3 && key2 == "values") {
      const size_t i = entries++;
      return i == 0 || i == 1 || i == 199999;
    }
    return true;
  };
  const auto doc = nlohmann::json::parse(slurp(js), keep);
  const auto& v = doc["results"]["values"];
  ASSERT_EQ(entries, 200000u);
  ASSERT_EQ(v.size(), 3u);  // entries 0, 1 and 199999
  EXPECT_EQ(doc["results"]["summary"]["count"], 200000);
  EXPECT_EQ(v[0]["input"], "nan");
  EXPECT_EQ(v[1]["input"], 1.0);
  EXPECT_EQ(v[2]["input"], 499.0);
  EXPECT_EQ(v[2]["bits"], "0x7E");  // 499 saturates to 448
  // The same text as the in-memory report of the same values (up to the provenance).
  auto small = run_cli("quantize --dtype e4m3 --json - nan 1 2 500");
  const std::string vt = write_temp("small.txt", "nan 1\n2 500\n");
  auto streamed = run_cli("quantize --dtype e4m3 --stdin --json -", vt);
  ASSERT_EQ(small.code, 0);
  ASSERT_EQ(streamed.code, 0);
  auto cut = [](const std::string& s) {
    return s.substr(s.find("\"results\""), s.find("\"provenance\"") - s.find("\"results\""));
  };
  EXPECT_EQ(cut(small.out), cut(streamed.out));
  auto ja = nlohmann::json::parse(small.out), jb = nlohmann::json::parse(streamed.out);
  EXPECT_EQ(ja["results"], jb["results"]);
  std::filesystem::remove_all(dir);
}

// ---- every bad input -> clear error, exit 2
TEST(CliQuantizeBadInput, UnknownDtypeListsAndSuggests) {
  auto r = run_cli("quantize --dtype e4m2 1.0");
  expect_usage_error(r, "unknown dtype 'e4m2'");
  EXPECT_NE(r.err.find("did you mean 'e4m3'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fp32, bf16, fp16, e4m3, e5m2"), std::string::npos) << r.err;
  auto far = run_cli("quantize --dtype zzzzzzzz 1.0");
  expect_usage_error(far, "valid: fp32, bf16, fp16, e4m3, e5m2");
}

TEST(CliQuantizeBadInput, HugeLiteralInValues) {
  auto r = run_cli("quantize --dtype e4m3 1.0 1e999");
  expect_usage_error(r, "value 2: '1e999' is beyond the float32 range");
  EXPECT_NE(r.err.find("write inf"), std::string::npos) << r.err;
  expect_usage_error(run_cli("quantize --dtype e4m3 1e39"), "'1e39' is beyond the float32 range");
  expect_usage_error(run_cli("quantize --dtype e4m3 1e-50"), "would read as 0");
}

TEST(CliQuantizeBadInput, NonNumberInValues) {
  expect_usage_error(run_cli("quantize --dtype e4m3 abc"), "value 1: 'abc' is not a number");
  expect_usage_error(run_cli("quantize --dtype e4m3 1.5x"), "'1.5x' is not a number");
  expect_usage_error(run_cli("quantize --dtype e4m3 nanx"), "'nanx' is not a number");
}

TEST(CliQuantizeBadInput, NonNumberOnStdinGivesLine) {
  const std::string f = write_temp("bad.txt", "1.0\n2.0 3.0\n4.0 abc\n");
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin", f),
                     "stdin line 3: 'abc' is not a number");
}

TEST(CliQuantizeBadInput, HugeLiteralOnStdinGivesLine) {
  const std::string f = write_temp("huge.txt", "nan\ninf\n1e999\n");
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin", f),
                     "stdin line 3: '1e999' is beyond");
}

TEST(CliQuantizeBadInput, NanAndInfOnStdinAreValid) {
  const std::string f = write_temp("ok.txt", "nan\n-inf\nINF\n");
  auto r = run_cli("quantize --dtype e5m2 --overflow ieee --stdin --json -", f);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto v = nlohmann::json::parse(r.out)["results"]["values"];
  EXPECT_EQ(v[0]["bits"], "0x7F");
  EXPECT_EQ(v[1]["bits"], "0xFC");
  EXPECT_EQ(v[2]["bits"], "0x7C");
  EXPECT_EQ(v[2]["saturated"], false);  // inf -> inf under ieee is not an overflow
}

TEST(CliQuantizeBadInput, BinaryStdinNotMultipleOf4) {
  const std::string f = write_temp("odd.bin", std::string("\x00\x00\x80\x3f\x00\x00", 6));
  auto r = run_cli("quantize --dtype e4m3 --stdin --binary", f);
  expect_usage_error(r, "stdin has 6 bytes, which is not a multiple of 4");
}

TEST(CliQuantizeBadInput, OptionMistakes) {
  expect_usage_error(run_cli("quantize --dtype e4m3"), "nothing to quantize");
  expect_usage_error(run_cli("quantize --dtype e4m3 --overflow saturate 1"),
                     "unknown --overflow 'saturate'");
  expect_usage_error(run_cli("quantize --dtype e4m3 --seed 3 1"),
                     "--seed is only used by stochastic rounding");
  expect_usage_error(run_cli("quantize --dtype e4m3 --rounding stochastic --seed -1 1"), "--seed");
  expect_usage_error(run_cli("quantize --dtype e4m3 --binary 1"), "--binary describes stdin");
  expect_usage_error(run_cli("quantize --dtype e4m3 --all-float32"), "needs --binary-out");
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin 1.0", write_temp("x.txt", "1\n")),
                     "give the values one way");
  expect_usage_error(run_cli("quantize --dtype e4m3 --json /nonexistent-dir/x.json 1"),
                     "does not exist");
  const std::string empty = write_temp("empty.txt", "# nothing\n");
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin", empty), "stdin holds no values");
}

// A NUL inside a token ends nothing: "1.5\0junk" was read as 1.5. The message shows the bytes it
// cannot print as \xNN (a NUL cut it short, an ESC reached the terminal).
TEST(CliQuantizeBadInput, NulAndControlBytesOnStdin) {
  const std::string f = write_temp("nul.txt", std::string("1.0\n1.5\0junk\n", 13));
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin", f),
                     "stdin line 2: '1.5\\x00junk' is not a number");
  const std::string g = write_temp("ctl.txt", std::string("\x00\x01\xff\x1b[31m\n", 9));
  auto r = run_cli("quantize --dtype e4m3 --stdin", g);
  expect_usage_error(r, "stdin line 1: '\\x00\\x01\\xff\\x1b[31m' is not a number");
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << "a raw ESC reached the terminal";
}

// An empty field between two commas is refused on stdin, as in every list option ("1,,2" read
// as two values).
TEST(CliQuantizeBadInput, EmptyFieldOnStdin) {
  const std::string f = write_temp("empty-field.txt", "0.5\n1,,2\n");
  expect_usage_error(run_cli("quantize --dtype e4m3 --stdin", f),
                     "stdin line 2: an empty field between two commas");
  const std::string ok =
      write_temp("commas.txt", "1, 2,3\n4\n,5 # a comma, in a comment,, is text\n");
  EXPECT_EQ(run_cli("quantize --dtype e4m3 --stdin", ok).code, 0);
}
