// rcp_approx_ftz, ex2_approx_ftz, lg2_approx_ftz (include/fa4sim/core/mufu.h): the measured tables
// load and their CRC-32 and hardware bit sums are checked; a missing or damaged table is refused
// (exit 2, naming the file and the rebuild command); the special values; the structure (every
// table entry is the model's result at its own input; elsewhere the rule, recomputed with float
// arithmetic); and (slow) over all 2^32 inputs each model reproduces the H200 probe's ulp histogram
// against the reference (1/x correctly rounded, exp2 / log2 in double rounded to float32, FTZ on
// input and output), bin for bin, with 0 special-class mismatches and 0 monotonicity violations.
// The cache of rebuilt ex2/lg2 tables (Note [MUFU table cache]): a hit is bit for bit the rebuild,
// a damaged cache file is rebuilt without an error, a changed input is never served from it, and
// an unwritable cache folder only means a rebuild.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_helpers.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/util/report.h"

using namespace fa4sim;
namespace fs = std::filesystem;

namespace {

float rcp(float x) { return rcp_approx_ftz(x); }
uint32_t rcp_bits(uint32_t x) { return f32_bits(rcp(f32_from_bits(x))); }

// The error load_rcp_table throws for the table at `bin`, "" if it loads.
std::string load_error(const std::string& bin) {
  std::vector<uint8_t> t;
  try {
    load_rcp_table(bin, t);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  return "";
}

// Copies one table and its sidecar into `dir`; returns the .bin path.
std::string copy_unit_table(const std::string& src, const fs::path& dir) {
  const std::string name = fs::path(src).filename().string();
  fs::copy_file(src, dir / name, fs::copy_options::overwrite_existing);
  fs::copy_file(src.substr(0, src.size() - 4) + ".json",
                dir / (name.substr(0, name.size() - 4) + ".json"),
                fs::copy_options::overwrite_existing);
  return (dir / name).string();
}

// A copy of the committed rcp table and sidecar in `dir`; returns the .bin path.
std::string copy_table(const fs::path& dir) { return copy_unit_table(rcp_table_path(), dir); }

void patch_byte(const std::string& path, size_t at, uint8_t v) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(v));
}

}  // namespace

TEST(Mufu, Crc32IsZlibs) {
  const std::string s = "123456789";  // the CRC-32 check value of IEEE 802.3
  EXPECT_EQ(crc32_ieee(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0xCBF43926u);
}

TEST(Mufu, TableLoadsAndMatchesItsChecksum) {
  std::vector<uint8_t> t;
  ASSERT_NO_THROW(load_rcp_table(rcp_table_path(), t));
  ASSERT_EQ(t.size(), kRcpTableBytes);
  const std::string path = rcp_table_path();
  const json meta = read_json_input(path.substr(0, path.size() - 4) + ".json", "sidecar");
  EXPECT_EQ(meta.at("crc32").get<std::string>(),
            fmt::format("{:08x}", crc32_ieee(t.data(), t.size())));
  // The sidecar's histogram of the deltas is the table's.
  std::array<uint64_t, 3> hist{};
  for (uint32_t j = 0; j < kRcpTableEntries; ++j) ++hist[size_t(rcp_table_delta(t.data(), j) + 1)];
  EXPECT_EQ(meta.at("delta_histogram").at("-1").get<uint64_t>(), hist[0]);
  EXPECT_EQ(meta.at("delta_histogram").at("0").get<uint64_t>(), hist[1]);
  EXPECT_EQ(meta.at("delta_histogram").at("1").get<uint64_t>(), hist[2]);
  EXPECT_EQ(meta.at("command").get<std::string>(), kRcpTableRebuild);
  EXPECT_EQ(rcp_table(), rcp_table());  // loaded once
}

TEST(Mufu, MissingOrDamagedTableIsRefused) {
  const fs::path dir = fa4sim::test::temp_dir("mufu");
  const std::string bin = copy_table(dir), side = (dir / "rcp_approx_ftz.json").string();
  ASSERT_EQ(load_error(bin), "");
  const std::string hint = std::string("rebuild with: ") + kRcpTableRebuild;
  // One flipped bit: the CRC-32 catches it.
  patch_byte(bin, 12345, 0x55 ^ 0x01);
  std::string e = load_error(bin);
  EXPECT_NE(e.find(bin), std::string::npos) << e;
  EXPECT_NE(e.find("CRC-32"), std::string::npos) << e;
  EXPECT_NE(e.find(hint), std::string::npos) << e;
  // Code 3 with a CRC-32 that agrees: refused for the code.
  fs::remove(bin);
  fs::remove(side);
  copy_table(dir);
  patch_byte(bin, 7, 0xFF);
  {
    std::ifstream f(bin, std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    json meta = read_json_input(side, "sidecar");
    meta["crc32"] = fmt::format("{:08x}", crc32_ieee(b.data(), b.size()));
    write_file_atomic(side, meta.dump(2));
  }
  e = load_error(bin);
  EXPECT_NE(e.find("code 3"), std::string::npos) << e;
  // Truncated, sidecar missing, table missing.
  fs::resize_file(bin, kRcpTableBytes - 1);
  EXPECT_NE(load_error(bin).find("expected"), std::string::npos);
  fs::remove(bin);
  e = load_error(bin);
  EXPECT_NE(e.find("missing"), std::string::npos) << e;
  EXPECT_NE(e.find(hint), std::string::npos) << e;
  fs::remove(side);
  fs::remove_all(dir);
  const fs::path dir2 = fa4sim::test::temp_dir("mufu");
  const std::string bin2 = copy_table(dir2);
  fs::remove(dir2 / "rcp_approx_ftz.json");
  EXPECT_NE(load_error(bin2).find("sidecar"), std::string::npos);
  fs::remove_all(dir2);
}

TEST(Mufu, SpecialValues) {
  EXPECT_EQ(rcp_bits(0x00000000u), 0x7F800000u);  // +0 -> +inf
  EXPECT_EQ(rcp_bits(0x80000000u), 0xFF800000u);  // -0 -> -inf
  EXPECT_EQ(rcp_bits(0x00000001u), 0x7F800000u);  // subnormal read as +0
  EXPECT_EQ(rcp_bits(0x807FFFFFu), 0xFF800000u);
  EXPECT_EQ(rcp_bits(0x7F800000u), 0x00000000u);  // +inf -> +0
  EXPECT_EQ(rcp_bits(0xFF800000u), 0x80000000u);
  EXPECT_EQ(rcp_bits(0x7FC00000u), kRcpNaN);
  EXPECT_EQ(rcp_bits(0xFF800001u), kRcpNaN);
  EXPECT_EQ(rcp(1.0f), 1.0f);  // table entry 0 is exact
  EXPECT_EQ(rcp(-2.0f), -0.5f);
  EXPECT_EQ(rcp(std::ldexp(1.0f, 126)), std::ldexp(1.0f, -126));  // the smallest normal result
  EXPECT_EQ(rcp_bits(0x7E800001u), 0x00000000u);                  // 2^126 (1 + 2^-23): flushed
  EXPECT_EQ(rcp_bits(0xFF7FFFFFu), 0x80000000u);                  // -max: -0
  EXPECT_EQ(rcp(std::ldexp(1.0f, -126)), std::ldexp(1.0f, 126));  // the largest result
  // The exponent moves, the mantissa's bits do not: rcp(3 2^e) = rcp(3) 2^-e.
  for (int e = -125; e <= 124; e += 7)
    EXPECT_EQ(rcp(std::ldexp(1.5f, e)), std::ldexp(rcp(1.5f), -e)) << e;
}

// ---- ex2_approx_ftz and lg2_approx_ftz: tables, structure, special values

namespace {

uint32_t ex2_bits(uint32_t x) { return f32_bits(ex2_approx_ftz(f32_from_bits(x))); }
uint32_t lg2_bits(uint32_t x) { return f32_bits(lg2_approx_ftz(f32_from_bits(x))); }

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Rewrites the sidecar of the table at `bin` with `f`.
template <typename F>
void edit_sidecar(const std::string& bin, F f) {
  const std::string side = bin.substr(0, bin.size() - 4) + ".json";
  json meta = read_json_input(side, "sidecar");
  f(meta);
  write_file_atomic(side, meta.dump(2));
}

// Sets the sidecar's CRC-32 to the file's, so that a later check is the one that fires.
void fix_crc(const std::string& bin) {
  const std::vector<uint8_t> b = read_bytes(bin);
  edit_sidecar(
      bin, [&](json& m) { m["crc32"] = fmt::format("{:08x}", crc32_ieee(b.data(), b.size())); });
}

// The error a loader throws for `bin`, "" if it loads; checks exit 2 and the rebuild hint.
template <typename Load>
std::string unit_load_error(Load load, const std::string& bin) {
  MufuTables t;
  try {
    load(bin, t, 2);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    const std::string w = e.what();
    EXPECT_NE(w.find(bin), std::string::npos) << w;
    EXPECT_NE(w.find(std::string("rebuild with: ") + kMufuTableRebuild), std::string::npos) << w;
    return w;
  }
  return "";
}

// x rounded toward zero to float32 (the reference for the integer RZ of lg2).
float rz_ref(double x) {
  float f = static_cast<float>(x);
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  return f;
}

}  // namespace

TEST(Mufu, Ex2TablesLoadAndAreTheHardwaresShape) {
  Stopwatch sw;
  MufuTables t;
  ASSERT_NO_THROW(load_ex2_table(ex2_table_path(), t, 2));
  std::printf("ex2 table: loaded, rebuilt and its bit sums checked in %.2f s (2 threads)\n",
              sw.seconds());
  ASSERT_EQ(t.a.size(), kMufuTableEntries);
  ASSERT_EQ(t.b.size(), kMufuTableEntries);
  EXPECT_EQ(t.a[0], 1.0f);
  EXPECT_EQ(t.b[0], 1.0f);
  for (uint32_t j = 0; j < kMufuTableEntries; ++j) {
    ASSERT_TRUE(t.a[j] >= 1.0f && t.a[j] < 2.0f) << j;   // ex2 of [0, 1)
    ASSERT_TRUE(t.b[j] >= 0.5f && t.b[j] <= 1.0f) << j;  // ex2 of (-1, 0]
    if (j > 0) {
      ASSERT_GE(t.a[j], t.a[j - 1]) << j;
    }
    if (j > 0) {
      ASSERT_LE(t.b[j], t.b[j - 1]) << j;
    }
  }
  const Ex2ApproxTable v = ex2_approx_table();
  EXPECT_EQ(v.pos, ex2_approx_table().pos);  // loaded once
  EXPECT_EQ(std::vector<float>(v.pos, v.pos + kMufuTableEntries), t.a);
  const std::string path = ex2_table_path();
  const json meta = read_json_input(path.substr(0, path.size() - 4) + ".json", "sidecar");
  EXPECT_EQ(meta.at("command").get<std::string>(), kMufuTableRebuild);
  EXPECT_EQ(meta.at("hardware_bit_sums").at("positive").get<uint64_t>(), 8967982403705966u);
  EXPECT_EQ(meta.at("hardware_bit_sums").at("negative").get<uint64_t>(), 8897613659528303u);
}

TEST(Mufu, Lg2TablesLoadAndAreTheHardwaresShape) {
  Stopwatch sw;
  MufuTables t;
  ASSERT_NO_THROW(load_lg2_table(lg2_table_path(), t, 2));
  std::printf(
      "lg2 table: loaded, decoded, rebuilt and its bit sums checked in %.2f s (2 threads)\n",
      sw.seconds());
  ASSERT_EQ(t.a.size(), kMufuTableEntries);
  ASSERT_EQ(t.b.size(), kMufuTableEntries);
  EXPECT_EQ(f32_bits(t.a[0]), 0u);  // lg2(1) = +0
  for (uint32_t j = 0; j < kMufuTableEntries; ++j) {
    ASSERT_TRUE(t.a[j] >= 0.0f && t.a[j] < 1.0f) << j;
    ASSERT_TRUE(t.b[j] >= -1.0f && t.b[j] < 0.0f) << j;
    if (j > 0) {
      ASSERT_GE(t.a[j], t.a[j - 1]) << j;
    }
    if (j > 0) {
      ASSERT_GE(t.b[j], t.b[j - 1]) << j;
    }
    for (float y : {t.a[j], t.b[j]}) {
      const double s = std::ldexp(static_cast<double>(y), kLg2FixedBits);
      ASSERT_EQ(s, std::floor(s)) << j;
    }
  }
  const std::string path = lg2_table_path();
  const json meta = read_json_input(path.substr(0, path.size() - 4) + ".json", "sidecar");
  EXPECT_EQ(meta.at("command").get<std::string>(), kMufuTableRebuild);
  EXPECT_EQ(meta.at("hardware_bit_sums").at("y0").get<uint64_t>(), 8848110589594779u);
  EXPECT_EQ(meta.at("hardware_bit_sums").at("y1").get<uint64_t>(), 26827514010279012u);
}

TEST(Mufu, Ex2SpecialValues) {
  const Ex2ApproxTable t = ex2_approx_table();
  for (uint32_t x : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu})
    EXPECT_EQ(ex2_bits(x), f32_bits(1.0f)) << x;  // ftz
  EXPECT_EQ(ex2_bits(0x7F800000u), 0x7F800000u);  // +inf
  EXPECT_EQ(ex2_bits(0x43000000u), 0x7F800000u);  // 128
  EXPECT_EQ(ex2_bits(0x7F7FFFFFu), 0x7F800000u);  // max
  EXPECT_EQ(ex2_bits(0xFF800000u), 0x00000000u);  // -inf -> +0
  EXPECT_EQ(ex2_bits(0xC3000000u), 0x00000000u);  // -128 -> +0
  EXPECT_EQ(ex2_bits(0xFF7FFFFFu), 0x00000000u);  // -max -> +0
  for (uint32_t x : {0x7FC00000u, 0xFFC00000u, 0x7F800001u})
    EXPECT_EQ(ex2_bits(x), kGpuCanonicalNaN) << x;
  EXPECT_EQ(ex2_approx_ftz(1.0f), 2.0f);  // the tables' entry 0 is 1
  EXPECT_EQ(ex2_approx_ftz(-1.0f), 0.5f);
  EXPECT_EQ(ex2_approx_ftz(127.0f), std::ldexp(1.0f, 127));
  EXPECT_EQ(ex2_approx_ftz(-126.0f), std::ldexp(1.0f, -126));  // the smallest normal result
  EXPECT_EQ(ex2_bits(0xC2FC0001u), 0u);  // -(126 + 2^-17): Tneg < 1 at i = 126: flushed
  EXPECT_EQ(ex2_approx_ftz(-125.5f), std::ldexp(t.neg[1u << 22], -125));
  // The largest input below 128, 127 + (1 - 2^-17): Tpos[2^23 - 2^6] 2^127, finite.
  EXPECT_EQ(ex2_approx_ftz(std::nextafter(128.0f, 0.0f)),
            std::ldexp(t.pos[kMufuTableEntries - (1u << 6)], 127));
  EXPECT_TRUE(std::isfinite(ex2_approx_ftz(std::nextafter(128.0f, 0.0f))));
}

// Every table entry is the model's result at its own input (+-j 2^-23); elsewhere the rule,
// recomputed with float arithmetic (floor, ldexp), as scripts/gpu/mufu_structure.cu tested it on the
// GPU, on every 997th input with 2^-126 <= |x| < 128.
TEST(Mufu, Ex2IsTheTableScaledByTheIntegerPart) {
  const Ex2ApproxTable t = ex2_approx_table();
  for (uint32_t j = 0; j < kMufuTableEntries; ++j) {
    const float x = std::ldexp(static_cast<float>(j), -23);
    ASSERT_EQ(f32_bits(ex2_approx_ftz(x, t)), f32_bits(t.pos[j])) << j;
    ASSERT_EQ(f32_bits(ex2_approx_ftz(-x, t)), f32_bits(t.neg[j])) << j;
  }
  uint64_t tested = 0;
  for (uint32_t b = 0x00800000u; b < 0x43000000u; b += 997) {
    const float ax = f32_from_bits(b), i = std::floor(ax), g = ax - i;  // exact
    const float gj = std::ldexp(std::floor(std::ldexp(g, 23)), -23);
    const uint32_t j = static_cast<uint32_t>(std::ldexp(gj, 23));
    const double up = std::ldexp(static_cast<double>(t.pos[j]), static_cast<int>(i));
    const double dn = std::ldexp(static_cast<double>(t.neg[j]), -static_cast<int>(i));
    ASSERT_EQ(f32_bits(ex2_approx_ftz(ax, t)), f32_bits(static_cast<float>(up))) << b;
    ASSERT_EQ(f32_bits(ex2_approx_ftz(-ax, t)),
              f32_bits(dn < 0x1p-126 ? 0.0f : static_cast<float>(dn)))
        << b;
    ++tested;
  }
  EXPECT_GT(tested, 1000000u);
}

TEST(Mufu, Lg2SpecialValues) {
  const Lg2ApproxTable t = lg2_approx_table();
  for (uint32_t x : {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu})
    EXPECT_EQ(lg2_bits(x), 0xFF800000u) << x;  // ftz: lg2(+-0) = -inf
  EXPECT_EQ(lg2_bits(0x7F800000u), 0x7F800000u);
  for (uint32_t x : {0xFF800000u, 0xBF800000u, 0x80800000u, 0xFF7FFFFFu, 0x7FC00000u, 0xFFC00001u})
    EXPECT_EQ(lg2_bits(x), kGpuCanonicalNaN) << x;  // x < 0, NaN
  EXPECT_EQ(lg2_bits(0x3F800000u), 0u);             // lg2(1) = +0
  for (int k = 0; k <= 127; ++k) EXPECT_EQ(lg2_approx_ftz(std::ldexp(1.0f, k)), float(k)) << k;
  // Below 1 the y1 table: lg2(2^k) = RZ(k + 1 + lg2.approx(1/2)), and lg2.approx(1/2) is not -1.
  EXPECT_EQ(lg2_approx_ftz(0.5f), t.y1[0]);
  EXPECT_EQ(f32_bits(t.y1[0]), 0xBF7FFFFEu);  // -1 + 2^-23
  for (int k = -126; k < 0; ++k) {
    const float y = lg2_approx_ftz(std::ldexp(1.0f, k));
    EXPECT_EQ(y, rz_ref(k + 1 + static_cast<double>(t.y1[0]))) << k;
    EXPECT_TRUE(y > float(k) && y < float(k + 1)) << k;  // never k itself
  }
  EXPECT_EQ(lg2_bits(0x7F7FFFFFu), f32_bits(rz_ref(127 + static_cast<double>(t.y0[0x7FFFFF]))));
}

// lg2(m) and lg2(m / 2) are the tables; elsewhere RZ(e + y0) / RZ(e + 1 + y1), recomputed in double
// (exact: 43 bits) and rounded toward zero with nextafter, on every 997th positive normal input.
TEST(Mufu, Lg2IsTheExponentPlusATableRoundedTowardZero) {
  const Lg2ApproxTable t = lg2_approx_table();
  for (uint32_t j = 0; j < kMufuTableEntries; ++j) {
    const float m = f32_from_bits(0x3F800000u | j);
    ASSERT_EQ(f32_bits(lg2_approx_ftz(m, t)), f32_bits(t.y0[j])) << j;
    ASSERT_EQ(f32_bits(lg2_approx_ftz(m * 0.5f, t)), f32_bits(t.y1[j])) << j;
  }
  uint64_t tested = 0;
  for (uint32_t b = 0x00800000u; b < 0x7F800000u; b += 997) {
    const int e = static_cast<int>(b >> 23) - 127;
    const uint32_t j = b & 0x007FFFFFu;
    const double sum =
        e >= 0 ? e + static_cast<double>(t.y0[j]) : e + 1 + static_cast<double>(t.y1[j]);
    ASSERT_EQ(f32_bits(lg2_approx_ftz(f32_from_bits(b), t)), f32_bits(rz_ref(sum))) << b;
    ++tested;
  }
  EXPECT_GT(tested, 2000000u);
}

// The integer RZ conversion against nextafter on doubles, over its whole range of exponents.
TEST(Mufu, FixedPointToFloatRoundsTowardZero) {
  uint64_t s = 0x9E3779B97F4A7C15u;
  for (int k = 0; k < 2000000; ++k) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    const int bits = 1 + static_cast<int>((s >> 58) % 44);  // |v| < 2^44: e + y, |e| <= 127
    const int64_t mag = static_cast<int64_t>((s >> 7) & ((uint64_t(1) << bits) - 1));
    const int64_t v = (s & 1u) ? -mag : mag;
    const float want = rz_ref(std::ldexp(static_cast<double>(v), -kLg2FixedBits));
    ASSERT_EQ(f32_bits(rz_fixed36_to_f32(v)), f32_bits(want)) << v;
  }
  EXPECT_EQ(f32_bits(rz_fixed36_to_f32(0)), 0u);
  EXPECT_EQ(rz_fixed36_to_f32(1), std::ldexp(1.0f, -36));
  EXPECT_EQ(rz_fixed36_to_f32((int64_t(1) << 25) - 1), std::nextafter(std::ldexp(1.0f, -11), 0.0f));
  EXPECT_EQ(msb_u64(1), 0);
  EXPECT_EQ(msb_u64(~uint64_t(0)), 63);
}

TEST(Mufu, DamagedEx2TableIsRefused) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-ex2");
  const std::string bin = copy_unit_table(ex2_table_path(), dir);
  const auto err = [&] { return unit_load_error(load_ex2_table, bin); };
  ASSERT_EQ(err(), "");
  patch_byte(bin, 4321, read_bytes(bin)[4321] ^ 0x01);  // one flipped bit: the CRC-32
  EXPECT_NE(err().find("CRC-32"), std::string::npos);
  // The same flip with a CRC-32 that agrees: the rebuilt negative table's sum is not the GPU's.
  copy_unit_table(ex2_table_path(), dir);
  const size_t at = kMufuTableEntries / 4 + 12345;  // in the negative half
  const uint8_t old = read_bytes(bin)[at];
  patch_byte(bin, at, static_cast<uint8_t>((old & ~3u) | ((old & 3u) == 1u ? 2u : 1u)));
  fix_crc(bin);
  std::string e = err();
  EXPECT_NE(e.find("negative ex2 table's bit sum"), std::string::npos) << e;
  EXPECT_NE(e.find("std::exp2"), std::string::npos) << e;
  // Code 3 in the positive half (it holds -1..+1).
  copy_unit_table(ex2_table_path(), dir);
  patch_byte(bin, 99, 0xFF);
  fix_crc(bin);
  EXPECT_NE(err().find("unused code 3"), std::string::npos);
  // A sidecar whose hardware sum is not the table's.
  copy_unit_table(ex2_table_path(), dir);
  edit_sidecar(bin, [](json& m) { m["hardware_bit_sums"]["positive"] = 8967982403705967u; });
  EXPECT_NE(err().find("positive ex2 table's bit sum"), std::string::npos);
  copy_unit_table(ex2_table_path(), dir);
  fs::resize_file(bin, kMufuTableEntries / 2 - 1);
  EXPECT_NE(err().find("expected 4194304"), std::string::npos);
  fs::remove(bin);
  EXPECT_NE(err().find("missing"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Mufu, DamagedLg2TableIsRefused) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-lg2");
  const std::string bin = copy_unit_table(lg2_table_path(), dir);
  const auto err = [&] { return unit_load_error(load_lg2_table, bin); };
  ASSERT_EQ(err(), "");
  patch_byte(bin, 100000, read_bytes(bin)[100000] ^ 0x10);
  EXPECT_NE(err().find("CRC-32"), std::string::npos);
  // A field's bit flipped, the CRC-32 fixed: a delta moves, y0's rebuilt sum is not the GPU's (or
  // the entry leaves the 2^-36 grid); either way refused. Byte 100000 lies in a y0 block's fields
  // unless it is a width byte: then the stream breaks instead.
  fix_crc(bin);
  EXPECT_NE(err(), "");
  // A width byte of 33 (the first block's), CRC-32 fixed.
  copy_unit_table(lg2_table_path(), dir);
  patch_byte(bin, 0, 33);
  fix_crc(bin);
  EXPECT_NE(err().find("width 33"), std::string::npos);
  // y1's sum in the sidecar off by one.
  copy_unit_table(lg2_table_path(), dir);
  edit_sidecar(bin, [](json& m) { m["hardware_bit_sums"]["y1"] = 26827514010279013u; });
  std::string e = err();
  EXPECT_NE(e.find("lg2 y1 table's bit sum"), std::string::npos) << e;
  EXPECT_NE(e.find("std::log2"), std::string::npos) << e;
  copy_unit_table(lg2_table_path(), dir);
  fs::resize_file(bin, fs::file_size(bin) - 1);
  EXPECT_NE(err().find("expected"), std::string::npos);
  fs::remove(dir / "lg2_approx_ftz.json");
  EXPECT_NE(err().find("sidecar"), std::string::npos);
  fs::remove(bin);
  EXPECT_NE(err().find("missing"), std::string::npos);
  fs::remove_all(dir);
}

// ---- the rebuilt tables kept in mufu_cache_dir() (Note [MUFU table cache])

namespace {

// Sets FA4SIM_CACHE_DIR for the scope (restores what was there).
struct CacheDirFor {
  std::string old;
  bool had = false;
  explicit CacheDirFor(const fs::path& dir) {
    if (const char* v = std::getenv("FA4SIM_CACHE_DIR")) old = v, had = true;
    setenv("FA4SIM_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDirFor() {
    if (had)
      setenv("FA4SIM_CACHE_DIR", old.c_str(), 1);
    else
      unsetenv("FA4SIM_CACHE_DIR");
  }
};

bool same_tables(const MufuTables& x, const MufuTables& y) {
  return x.a.size() == kMufuTableEntries && x.b.size() == kMufuTableEntries &&
         x.a.size() == y.a.size() && x.b.size() == y.b.size() &&
         std::memcmp(x.a.data(), y.a.data(), x.a.size() * sizeof(float)) == 0 &&
         std::memcmp(x.b.data(), y.b.data(), x.b.size() * sizeof(float)) == 0;
}

// The cache files of `unit` in `dir`.
std::vector<fs::path> cache_files(const fs::path& dir, const std::string& unit) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("mufu-" + unit + "-", 0) == 0) out.push_back(e.path());
  return out;
}

template <typename Load>
void check_cache(Load load, const std::string& path, const std::string& unit) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-cache-" + unit);
  const CacheDirFor env(dir / "cache");
  EXPECT_EQ(mufu_cache_dir(), (dir / "cache").string());
  MufuTables built, hit;
  load(path, built, 2);  // an empty cache: rebuilt, then written
  EXPECT_FALSE(built.from_cache);
  const std::vector<fs::path> files = cache_files(dir / "cache", unit);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(cache_files(dir / "cache", unit == "ex2" ? "lg2" : "ex2").empty());
  load(path, hit, 2);
  EXPECT_TRUE(hit.from_cache);
  EXPECT_TRUE(same_tables(built, hit));  // bit for bit
  if (unit != "ex2") {  // lg2: a hit is all that differs (the damaged cases are the same code)
    fs::remove_all(dir);
    return;
  }
  const std::string f = files[0].string();
  const size_t size = fs::file_size(f);
  // Two entries of the first table swapped: the bit sums still hold, only the checksum tells.
  {
    const size_t a0 = size - 8 - 2 * size_t(kMufuTableEntries) * 4;
    std::vector<uint8_t> b = read_bytes(f);
    ASSERT_NE(std::memcmp(&b[a0 + 4 * 100], &b[a0 + 4 * 200], 4), 0);
    for (int k = 0; k < 4; ++k) std::swap(b[a0 + 4 * 100 + size_t(k)], b[a0 + 4 * 200 + size_t(k)]);
    std::ofstream(f, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    MufuTables again;
    ASSERT_NO_THROW(load(path, again, 2));
    EXPECT_FALSE(again.from_cache);
    EXPECT_TRUE(same_tables(built, again));
    load(path, again, 2);  // rewritten
    EXPECT_TRUE(again.from_cache);
  }
  fs::resize_file(f, size - 1);  // a file cut short
  MufuTables cut;
  ASSERT_NO_THROW(load(path, cut, 2));
  EXPECT_FALSE(cut.from_cache);
  EXPECT_TRUE(same_tables(built, cut));
  EXPECT_EQ(fs::file_size(f), size);
  EXPECT_EQ(cache_files(dir / "cache", unit).size(), 1u);  // no temporary file left behind
  // A copy of the input elsewhere is the same input (the key is the bytes, not the path); its
  // sidecar rewritten (the same fields, other bytes) is another input: rebuilt.
  const std::string copy = copy_unit_table(path, dir);
  MufuTables other;
  load(copy, other, 2);
  EXPECT_TRUE(other.from_cache);
  edit_sidecar(copy, [](json& m) { m["comment"] = "copied for the cache test"; });
  load(copy, other, 2);
  EXPECT_FALSE(other.from_cache);
  EXPECT_TRUE(same_tables(built, other));
  // One entry per unit: the new input's replaced the old one.
  EXPECT_EQ(cache_files(dir / "cache", unit).size(), 1u);
  EXPECT_FALSE(fs::exists(f));
  load(path, other, 2);
  EXPECT_FALSE(other.from_cache);
  fs::remove_all(dir);
}

}  // namespace

TEST(Mufu, TableCacheHitIsBitIdenticalAndADamagedCacheIsRebuilt) {
  check_cache(load_ex2_table, ex2_table_path(), "ex2");
  check_cache(load_lg2_table, lg2_table_path(), "lg2");
}

TEST(Mufu, ChangedInputIsNotServedFromTheCache) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-cache-changed");
  const CacheDirFor env(dir / "cache");
  // The cache holds the committed tables (under the copy's path, too: the key is the bytes).
  const std::string bin = copy_unit_table(ex2_table_path(), dir);
  ASSERT_EQ(unit_load_error(load_ex2_table, bin), "");
  MufuTables t;
  load_ex2_table(bin, t, 2);
  ASSERT_TRUE(t.from_cache);
  // One code of the negative half changed and the CRC-32 fixed: refused as without a cache.
  const size_t at = kMufuTableEntries / 4 + 12345;
  const uint8_t old = read_bytes(bin)[at];
  patch_byte(bin, at, static_cast<uint8_t>((old & ~3u) | ((old & 3u) == 1u ? 2u : 1u)));
  fix_crc(bin);
  EXPECT_NE(unit_load_error(load_ex2_table, bin).find("negative ex2 table's bit sum"),
            std::string::npos);
  // The sidecar's hardware sum changed: refused.
  copy_unit_table(ex2_table_path(), dir);
  edit_sidecar(bin, [](json& m) { m["hardware_bit_sums"]["positive"] = 8967982403705967u; });
  EXPECT_NE(unit_load_error(load_ex2_table, bin).find("positive ex2 table's bit sum"),
            std::string::npos);
  // lg2: a width byte of 33, CRC-32 fixed, with the committed table in the cache.
  const std::string lg2 = copy_unit_table(lg2_table_path(), dir);
  ASSERT_EQ(unit_load_error(load_lg2_table, lg2), "");
  patch_byte(lg2, 0, 33);
  fix_crc(lg2);
  EXPECT_NE(unit_load_error(load_lg2_table, lg2).find("width 33"), std::string::npos);
  fs::remove_all(dir);
}

// map_cached_*_table, what ex2_approx_table() and lg2_approx_table() use: an intact entry is
// mapped and holds the loaded tables bit for bit, at aligned addresses; an entry that fails any
// check of a read is a miss; a damaged input is refused as load_*_table refuses it.
TEST(Mufu, CacheEntryIsMappedOnlyWhenEveryCheckHolds) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-cache-map");
  const CacheDirFor env(dir / "cache");
  const std::string bin = ex2_table_path();
  Ex2ApproxTable v;
  EXPECT_FALSE(map_cached_ex2_table(bin, v));  // an empty cache
  MufuTables built;
  load_ex2_table(bin, built, 2);  // rebuilt, then written
  ASSERT_TRUE(map_cached_ex2_table(bin, v));
  constexpr size_t kBytes = size_t(kMufuTableEntries) * sizeof(float);
  EXPECT_EQ(std::memcmp(v.pos, built.a.data(), kBytes), 0);
  EXPECT_EQ(std::memcmp(v.neg, built.b.data(), kBytes), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.pos) % alignof(float), 0u);
  const std::vector<fs::path> files = cache_files(dir / "cache", "ex2");
  ASSERT_EQ(files.size(), 1u);
  const std::string f = files[0].string();
  const size_t size = fs::file_size(f);
  // Each damage is made in place and undone (the mappings made above are not read again).
  const auto byte_at = [&](size_t at) {
    std::ifstream in(f, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(at));
    return static_cast<uint8_t>(in.get());
  };
  const auto mapped = [&] {
    Ex2ApproxTable w;
    return map_cached_ex2_table(bin, w);
  };
  // Two entries of the negative table swapped: the bit sums still hold, only the checksum tells.
  const size_t e1 = size - 8 - kBytes + 4 * 100, e2 = e1 + 4 * 100;
  std::array<uint8_t, 4> x{}, y{};
  for (size_t k = 0; k < 4; ++k) x[k] = byte_at(e1 + k), y[k] = byte_at(e2 + k);
  ASSERT_NE(x, y);
  for (size_t k = 0; k < 4; ++k) patch_byte(f, e1 + k, y[k]), patch_byte(f, e2 + k, x[k]);
  EXPECT_FALSE(mapped());
  for (size_t k = 0; k < 4; ++k) patch_byte(f, e1 + k, x[k]), patch_byte(f, e2 + k, y[k]);
  for (const size_t at :
       {size - 1, size_t(100)}) {  // the checksum; the copy of the input (its tag)
    const uint8_t old = byte_at(at);
    patch_byte(f, at, old ^ 1u);
    EXPECT_FALSE(mapped()) << at;
    patch_byte(f, at, old);
  }
  const uint8_t last = byte_at(size - 1);
  fs::resize_file(f, size - 1);  // cut short
  EXPECT_FALSE(mapped());
  fs::resize_file(f, size + 1);  // a byte after the checksum
  patch_byte(f, size - 1, last);
  EXPECT_FALSE(mapped());
  fs::resize_file(f, size);
  EXPECT_TRUE(mapped());  // every damage undone
  // A damaged input is refused before the cache is looked at, as load_ex2_table refuses it.
  const std::string copy = copy_unit_table(bin, dir);
  patch_byte(copy, 4321, read_bytes(copy)[4321] ^ 0x01);
  EXPECT_THROW(map_cached_ex2_table(copy, v), Error);
  // lg2: the entry written by a load is mapped and holds its tables.
  Lg2ApproxTable l;
  EXPECT_FALSE(map_cached_lg2_table(lg2_table_path(), l));
  MufuTables lg2;
  load_lg2_table(lg2_table_path(), lg2, 2);
  ASSERT_TRUE(map_cached_lg2_table(lg2_table_path(), l));
  EXPECT_EQ(std::memcmp(l.y0, lg2.a.data(), kBytes), 0);
  EXPECT_EQ(std::memcmp(l.y1, lg2.b.data(), kBytes), 0);
  fs::remove_all(dir);
}

TEST(Mufu, UnwritableCacheFolderRebuildsWithoutAnError) {
  const fs::path dir = fa4sim::test::temp_dir("mufu-cache-ro");
  std::ofstream(dir / "file") << "a file, not a folder";
  const CacheDirFor env(dir / "file" / "cache");
  for (int k = 0; k < 2; ++k) {
    MufuTables t;
    ASSERT_NO_THROW(load_ex2_table(ex2_table_path(), t, 2));
    EXPECT_FALSE(t.from_cache);
  }
  fs::remove_all(dir);
}

// ---- the H200 histograms and monotonicity, over all 2^32 inputs

namespace {

// What scripts/gpu/mufu_probe.cu's k_sweep bins: the distance in ulps (ordered bits) of the unit's
// result from the reference, with the unit's FTZ on input (subnormal -> +-0) and output (below
// 2^-126 -> +-0), clipped to -8..8; specials (zero, inf, NaN) agree when both are the same class.
// NaN inputs are skipped; bin 17 counts special-class mismatches.
constexpr int kBins = 18;
int64_t ordered(uint32_t b) { return (b & 0x80000000u) ? -int64_t(b & 0x7FFFFFFFu) : int64_t(b); }

template <typename Ref>
int probe_bin(uint32_t b, uint32_t yb, Ref ref) {
  const float x = f32_from_bits(b), y = f32_from_bits(yb);
  const bool sub = std::fabs(x) < 1.17549435e-38f && x != 0.0f;
  float r = ref(sub ? std::copysign(0.0f, x) : x);
  if (std::fabs(r) < 1.17549435e-38f) r = std::copysign(0.0f, r);
  const uint32_t rb = f32_bits(r);
  if (std::isfinite(y) && std::isfinite(r) && y != 0.0f && r != 0.0f) {
    const int64_t d = std::clamp<int64_t>(ordered(yb) - ordered(rb), -8, 8);
    return static_cast<int>(d) + 8;
  }
  return (yb == rb || (std::isnan(y) && std::isnan(r)) || (y == 0.0f && r == 0.0f)) ? 8 : 17;
}

struct SweepResult {
  std::array<uint64_t, kBins> hist{};
  uint64_t non_monotone = 0;
};

// Every input through `model` (bits -> bits), binned against `ref`, and the probe's monotonicity
// check: for each non-NaN, non-subnormal, finite x, its neighbour in value order xn (+0 after -0),
// if neither NaN nor subnormal, must give ok(x, y, yn) (NaN results excepted). 2 threads.
// The model runs once per input: in blocks, with the inputs just outside the block, so xn's
// result is at hand (x + 1 for x >= +0, x - 1 for x < -0).
template <typename Model, typename Ref, typename Ok>
SweepResult sweep_all(Model model, Ref ref, Ok ok) {
  constexpr uint64_t kChunk = uint64_t(1) << 24;
  constexpr uint64_t kBlock = uint64_t(1) << 12;
  constexpr uint64_t kAll = uint64_t(1) << 32;
  std::vector<SweepResult> parts(chunk_count(kAll, kChunk));
  const auto subnormal = [](uint32_t b) { return (b & 0x7F800000u) == 0 && (b & 0x007FFFFFu); };
  const uint32_t y_plus_zero = model(0u);
  parallel_chunks(kAll, kChunk, 2, [&](uint64_t c, uint64_t b, uint64_t e) {
    SweepResult& p = parts[c];
    std::array<uint32_t, kBlock + 2> ys;  // ys[k] = model(s - 1 + k), inside [0, 2^32)
    for (uint64_t s = b; s < e; s += kBlock) {
      const uint64_t n = std::min(kBlock, e - s);
      for (uint64_t k = s == 0 ? 1 : 0; k < n + 2 && s - 1 + k < kAll; ++k)
        ys[size_t(k)] = model(static_cast<uint32_t>(s - 1 + k));
      for (uint64_t i = 0; i < n; ++i) {
        const uint32_t x = static_cast<uint32_t>(s + i);
        if ((x & 0x7FFFFFFFu) > 0x7F800000u) continue;  // NaN: not binned by the probe
        const uint32_t y = ys[size_t(i + 1)];
        ++p.hist[size_t(probe_bin(x, y, ref))];
        if ((x & 0x7FFFFFFFu) == 0x7F800000u || subnormal(x)) continue;
        const uint32_t xn = x == 0x80000000u ? 0u : ((x >> 31) ? x - 1 : x + 1);
        if ((xn & 0x7FFFFFFFu) > 0x7F800000u || subnormal(xn)) continue;
        const uint32_t yn =
            x == 0x80000000u ? y_plus_zero : ys[size_t((x >> 31) ? i : i + 2)];  // model(xn)
        const float fy = f32_from_bits(y), fyn = f32_from_bits(yn);
        if (!std::isnan(fy) && !std::isnan(fyn) && !ok(f32_from_bits(x), fy, fyn)) ++p.non_monotone;
      }
    }
  });
  SweepResult r;
  for (const SweepResult& p : parts) {
    for (int k = 0; k < kBins; ++k) r.hist[size_t(k)] += p.hist[size_t(k)];
    r.non_monotone += p.non_monotone;
  }
  return r;
}

// Checks a sweep against the probe's record of `unit` (data/gpu/mufu/2026-12-01/mufu_probe.json).
void expect_probe(const std::string& unit_name, const SweepResult& r, double seconds) {
  const json probe = read_json_input(data_dir() + "/gpu/mufu/2026-12-01/mufu_probe.json", "probe");
  json unit;
  for (const auto& u : probe.at("units"))
    if (u.at("unit") == unit_name) unit = u;
  ASSERT_TRUE(unit.is_object()) << unit_name;
  std::string got;
  for (int k = 0; k < 17; ++k) got += fmt::format("{}{}", k ? " " : "", r.hist[size_t(k)]);
  std::printf(
      "%s model vs reference over all non-NaN inputs, ulps -8..8: %s; special mismatches "
      "%llu; monotonicity violations %llu; %.1f s (2 threads)\n",
      unit_name.c_str(), got.c_str(), static_cast<unsigned long long>(r.hist[17]),
      static_cast<unsigned long long>(r.non_monotone), seconds);
  const auto& want = unit.at("ulp_hist_m8_to_p8");
  ASSERT_EQ(want.size(), 17u);
  for (int k = 0; k < 17; ++k)
    EXPECT_EQ(r.hist[size_t(k)], want[size_t(k)].get<uint64_t>()) << unit_name << " bin " << k - 8;
  EXPECT_EQ(r.hist[17], unit.at("special_mismatch").get<uint64_t>());
  EXPECT_EQ(r.hist[17], 0u);
  EXPECT_EQ(r.non_monotone, unit.at("non_monotone").get<uint64_t>());
  EXPECT_EQ(r.non_monotone, 0u);  // the H200 measured 0 violations
}

}  // namespace

TEST(MufuSlow, RcpReproducesTheH200HistogramOverAll2to32Inputs) {
  const uint8_t* table = rcp_table();
  Stopwatch sw;
  const SweepResult r =
      sweep_all([table](uint32_t x) { return f32_bits(rcp_approx_ftz(f32_from_bits(x), table)); },
                [](float x) { return 1.0f / x; },  // IEEE division: correctly rounded
                // Decreasing within each sign; the step -0 -> +0 (-inf -> +inf) is the pole.
                [](float x, float y, float yn) { return yn <= y || x == 0.0f; });
  expect_probe("rcp.approx.ftz.f32", r, sw.seconds());
}

TEST(MufuSlow, Ex2ReproducesTheH200HistogramOverAll2to32Inputs) {
  const Ex2ApproxTable table = ex2_approx_table();
  Stopwatch sw;
  const SweepResult r = sweep_all(
      [table](uint32_t x) { return f32_bits(ex2_approx_ftz(f32_from_bits(x), table)); },
      // 2^x is inf in float32 for x >= 128 and 0 after the probe's flush for x < -126; libm is
      // not asked where its overflow and underflow paths (which set errno, slowly) would
      // run: x >= 1024 and x < -1100.
      [](float x) {
        if (x >= 1024.0f) return std::numeric_limits<float>::infinity();
        if (x < -1100.0f) return 0.0f;
        return static_cast<float>(std::exp2(static_cast<double>(x)));
      },
      [](float, float y, float yn) { return yn >= y; });
  expect_probe("ex2.approx.ftz.f32", r, sw.seconds());
}

TEST(MufuSlow, Lg2ReproducesTheH200HistogramOverAll2to32Inputs) {
  const Lg2ApproxTable table = lg2_approx_table();
  Stopwatch sw;
  const SweepResult r =
      sweep_all([table](uint32_t x) { return f32_bits(lg2_approx_ftz(f32_from_bits(x), table)); },
                // log2 of a negative number is NaN (libm's domain-error path sets errno, slowly).
                [](float x) {
                  if (x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
                  return static_cast<float>(std::log2(static_cast<double>(x)));
                },
                [](float, float y, float yn) { return yn >= y; });
  expect_probe("lg2.approx.ftz.f32", r, sw.seconds());
}
