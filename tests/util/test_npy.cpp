// test_npy.cpp: the strict .npy reader. Round trips through our writer, files written by numpy
// itself (when a python3 with numpy is available; otherwise those tests print why and skip),
// every header field's failure mode, and the inputs the fuzzer found (tests/fuzz/npy_fuzz.cpp).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_helpers.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

namespace fa4sim {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Builds a v1/v2/v3 image from a header dict text (padded to 64 like numpy) and data bytes.
std::vector<uint8_t> image(const std::string& dict, const std::vector<uint8_t>& data, int major = 1,
                           bool pad = true) {
  std::string header = dict;
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (pad) {
    const size_t unpadded = 8 + len_bytes + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
  }
  std::vector<uint8_t> out = bytes_of(std::string("\x93NUMPY", 6));
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < len_bytes; ++i)
    out.push_back(static_cast<uint8_t>((header.size() >> (8 * i)) & 0xFF));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Expects parse_npy to throw an Error (exit code 2) whose message contains `needle`.
void expect_error(const std::vector<uint8_t>& img, const std::string& needle) {
  try {
    parse_npy(img.data(), img.size(), "t.npy");
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

const std::string kGood = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const std::vector<float> k6 = {1, 2, 3, 4, 5, 6};

TEST(Npy, ReadsV1V2V3) {
  for (int major : {1, 2, 3}) {
    const auto img = image(kGood, f32_bytes(k6), major);
    const NpyArray a = parse_npy(img.data(), img.size(), "t.npy");
    EXPECT_EQ(a.version_major, major);
    EXPECT_EQ(a.type, NpyType::f32);
    ASSERT_EQ(a.shape, (std::vector<uint64_t>{2, 3}));
    EXPECT_EQ(a.to_float32(), k6);
  }
}

TEST(Npy, HeaderSyntaxVariantsNumpyAccepts) {
  // Double quotes, no trailing comma, different key order, no padding, 16-byte-era alignment.
  for (const std::string dict :
       {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
        "{'shape': (2,3), 'fortran_order': False, 'descr': '<f4'}",
        "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }"}) {
    const auto img = image(dict, f32_bytes(k6));
    EXPECT_EQ(parse_npy(img.data(), img.size(), "t.npy").to_float32(), k6) << dict;
    const auto raw = image(dict, f32_bytes(k6), 1, false);
    EXPECT_EQ(parse_npy(raw.data(), raw.size(), "t.npy").to_float32(), k6) << dict;
  }
}

TEST(Npy, ScalarAndEmptyShapes) {
  const auto s = image("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", f32_bytes({7}));
  const NpyArray a = parse_npy(s.data(), s.size(), "t.npy");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a.value(0), 7.0f);
  const auto e = image("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", {});
  EXPECT_EQ(parse_npy(e.data(), e.size(), "t.npy").size(), 0u);
}

TEST(Npy, FortranOrderIsTransposedToCOrder) {
  // A 2x3 matrix [[1,2,3],[4,5,6]] stored column-major is 1 4 2 5 3 6.
  const auto img = image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                         f32_bytes({1, 4, 2, 5, 3, 6}));
  const NpyArray a = parse_npy(img.data(), img.size(), "t.npy");
  EXPECT_TRUE(a.fortran_order);
  EXPECT_EQ(a.to_float32(), k6);
  // Rank 3, shape (2, 2, 2): element (i, j, k) = 100i + 10j + k; F order has i fastest.
  std::vector<float> f;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) f.push_back(static_cast<float>(100 * i + 10 * j + k));
  const auto img3 =
      image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", f32_bytes(f));
  const auto c = parse_npy(img3.data(), img3.size(), "t.npy").to_float32();
  EXPECT_EQ(c, (std::vector<float>{0, 1, 10, 11, 100, 101, 110, 111}));
}

TEST(Npy, Float16AndBfloat16Decoding) {
  // fp16: 1.0 = 0x3C00, -2 = 0xC000, max 65504 = 0x7BFF, min subnormal 2^-24 = 0x0001,
  // +inf = 0x7C00, NaN = 0x7E00.
  const uint16_t h[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x7E00};
  std::vector<uint8_t> hb(sizeof h);
  std::memcpy(hb.data(), h, sizeof h);
  const auto img = image("{'descr': '<f2', 'fortran_order': False, 'shape': (6,), }", hb);
  const auto v = parse_npy(img.data(), img.size(), "t.npy").to_float32();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 65504.0f);
  EXPECT_EQ(v[3], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(v[4]) && v[4] > 0);
  EXPECT_TRUE(std::isnan(v[5]));
  // bf16 bits as uint16: 1.0 = 0x3F80, -3.0 = 0xC040, 2^-133 (min subnormal) = 0x0001.
  const uint16_t b[] = {0x3F80, 0xC040, 0x0001};
  std::vector<uint8_t> bb(sizeof b);
  std::memcpy(bb.data(), b, sizeof b);
  const auto imgb = image("{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }", bb);
  const NpyArray a = parse_npy(imgb.data(), imgb.size(), "t.npy");
  EXPECT_EQ(a.value(0), 1.0f);
  EXPECT_EQ(a.value(1), -3.0f);
  EXPECT_EQ(a.value(2), std::ldexp(1.0f, -133));
  EXPECT_EQ(a.value(0, /*u16_is_bf16=*/false), 16256.0f);
}

TEST(Npy, Fp16DecodeIsExactForAllPatterns) {
  // Every one of the 65,536 fp16 patterns against the closed form (-1)^s * 2^(e-15) * (1 + m/1024)
  // (normal) / 2^-14 * m/1024 (subnormal), computed in double.
  std::vector<uint8_t> raw(65536 * 2);
  for (uint32_t i = 0; i < 65536; ++i) {
    raw[2 * i] = static_cast<uint8_t>(i & 0xFF);
    raw[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  }
  const auto img = image("{'descr': '<f2', 'fortran_order': False, 'shape': (65536,), }", raw);
  const NpyArray a = parse_npy(img.data(), img.size(), "t.npy");
  int mismatches = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const int s = i >> 15, e = (i >> 10) & 31, m = i & 1023;
    const float got = a.value(i);
    if (e == 31) {
      if (m == 0 ? !(std::isinf(got) && std::signbit(got) == (s == 1)) : !std::isnan(got))
        ++mismatches;
      continue;
    }
    const double mag = e == 0 ? std::ldexp(m / 1024.0, -14) : std::ldexp(1.0 + m / 1024.0, e - 15);
    const double want = s ? -mag : mag;
    if (static_cast<double>(got) != want || std::signbit(got) != (s == 1)) {
      if (mismatches < 10) ADD_FAILURE() << "fp16 0x" << std::hex << i << " -> " << got;
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Npy, WriterRoundTripAndNumpyAlignment) {
  const auto dir = test::temp_dir("npy");
  const std::string p = (dir / "x.npy").string();
  write_npy_f32(p, {3, 2}, k6);
  const std::string text = test::slurp(p);
  const uint16_t hl =
      static_cast<uint16_t>(static_cast<uint8_t>(text[8]) | (static_cast<uint8_t>(text[9]) << 8));
  EXPECT_EQ((10 + hl) % 64, 0u);
  const NpyArray a = read_npy(p);
  EXPECT_EQ(a.shape, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(a.to_float32(), k6);
  EXPECT_EQ(read_npy_2d_f32(p).size(), 6u);
  std::filesystem::remove_all(dir);
}

// ---- every way a header or a file can be wrong
TEST(Npy, RefusesNonNpyAndBadPrefix) {
  expect_error(bytes_of("hello world, not numpy"), "does not start with the .npy magic");
  expect_error({}, "does not start with the .npy magic");
  expect_error(bytes_of(std::string("\x93NUMPY", 6)), "does not start with the .npy magic");
  auto img = image(kGood, f32_bytes(k6));
  img[6] = 4;
  expect_error(img, "unsupported .npy format version 4.0");
  img[6] = 1;
  img[7] = 1;
  expect_error(img, "unsupported .npy format version 1.1");
  expect_error(bytes_of(std::string("\x93NUMPY\x02\x00\x10", 9)), "inside the header length");
  auto empty = bytes_of(std::string("\x93NUMPY\x01\x00\x00\x00", 10));
  expect_error(empty, "header is empty");
  auto big = image(kGood, f32_bytes(k6));
  big[8] = 0xFF;
  big[9] = 0xFF;
  expect_error(big, "truncated");
}

TEST(Npy, RefusesBadHeaderFields) {
  const auto d = f32_bytes(k6);
  expect_error(image("['descr', '<f4']", d), "must be a Python dict");
  expect_error(image("{'descr': '<f4', 'fortran_order': False}", d), "lacks the key(s) 'shape'");
  expect_error(image("{'shape': (2, 3)}", d), "lacks the key(s) 'descr' 'fortran_order'");
  expect_error(
      image("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", d),
      "'descr' twice");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", d),
               "unexpected key 'x'");
  expect_error(image("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}", d),
               "structured dtypes are not supported");
  expect_error(image("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", d),
               "must be True or False");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", d),
               "must be a tuple");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", d),
               "non-negative integers");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", d),
               "is an integer, not a tuple");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}", d),
               "leading zero");
  expect_error(
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", d),
      "too large");
  expect_error(
      image("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", d),
      "too many elements");
  expect_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} junk", d),
               "unexpected text after the header");
  expect_error(image("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2, 3)}", d),
               "escape sequences");
  expect_error(image("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", d),
               "expected ':' after key 'descr'");
  expect_error(image("{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}", d),
               "expected ',' or '}'");
  expect_error(image("{'descr': '<f4'", d), "expected ',' or '}'");
  expect_error(image(std::string("{'descr': '<f4'\0}", 17), d), "NUL byte");
}

TEST(Npy, RefusesWrongTypesAndEndianness) {
  const auto d = f32_bytes(k6);
  expect_error(image("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}", d),
               "big-endian data ('>f4')");
  expect_error(image("{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", d),
               "element type '<f8'");
  expect_error(image("{'descr': '|O', 'fortran_order': False, 'shape': (3,)}", d),
               "element type '|O'");
}

TEST(Npy, RefusesTruncatedAndTrailingData) {
  auto d = f32_bytes(k6);
  d.pop_back();
  expect_error(image(kGood, d),
               "data are truncated: shape (2, 3) of float32 needs 24 bytes, the file has 23");
  d = f32_bytes(k6);
  d.push_back(0);
  expect_error(image(kGood, d), "1 unexpected bytes after the data");
}

TEST(Npy, FileErrors) {
  try {
    read_npy("/nonexistent/dir/x.npy");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
  const auto dir = test::temp_dir("npy");
  const std::string p = (dir / "h.npy").string();
  const uint16_t h[] = {0x3C00, 0x3C00};
  write_npy(p, NpyType::f16, {2}, h, sizeof h);
  try {
    read_npy_2d_f32(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected float32"), std::string::npos) << e.what();
  }
  write_npy_f32(p, {6}, k6);
  try {
    read_npy_2d_f32(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape (6,), expected a 2-D array"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

// ---- files written by numpy itself
std::string python_with_numpy() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

TEST(Npy, FilesWrittenByNumpy) {
  const std::string py = python_with_numpy();
  if (py.empty()) GTEST_SKIP() << "no python3 with numpy on this machine";
  const auto dir = test::temp_dir("npy-numpy");
  const std::string script = (dir / "gen.py").string();
  {
    std::ofstream f(script);
    f << "import numpy as np, sys\n"
         "d = sys.argv[1]\n"
         "x = (np.arange(24, dtype=np.float64).reshape(2, 3, 4) * 0.5 - 3).astype(np.float32)\n"
         "np.save(d + '/c.npy', x)\n"
         "np.save(d + '/f.npy', np.asfortranarray(x))\n"
         "np.save(d + '/h.npy', x.astype(np.float16))\n"
         "np.save(d + '/b.npy', (x.view(np.uint32) >> 16).astype(np.uint16))\n"
         "np.save(d + '/be.npy', x.astype('>f4'))\n"
         "np.save(d + '/f8.npy', x.astype(np.float64))\n"
         "np.lib.format.write_array(open(d + '/v2.npy', 'wb'), x, version=(2, 0))\n"
         "np.lib.format.write_array(open(d + '/v3.npy', 'wb'), x, version=(3, 0))\n";
  }
  ASSERT_EQ(std::system((py + " " + script + " " + dir.string()).c_str()), 0);
  std::vector<float> want;
  for (int i = 0; i < 24; ++i) want.push_back(static_cast<float>(i * 0.5 - 3));
  for (const char* name : {"c.npy", "f.npy", "h.npy", "b.npy", "v2.npy", "v3.npy"}) {
    const NpyArray a = read_npy((dir / name).string());
    EXPECT_EQ(a.shape, (std::vector<uint64_t>{2, 3, 4})) << name;
    EXPECT_EQ(a.to_float32(), want) << name;  // every value is exact in fp16 and bf16
  }
  EXPECT_TRUE(read_npy((dir / "f.npy").string()).fortran_order);
  EXPECT_EQ(read_npy((dir / "v3.npy").string()).version_major, 3);
  EXPECT_THROW(read_npy((dir / "be.npy").string()), Error);
  EXPECT_THROW(read_npy((dir / "f8.npy").string()), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fa4sim
