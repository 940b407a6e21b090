// rcp_approx_ftz (include/fa4sim/core/mufu.h): the measured table loads and its CRC-32 is checked;
// a missing or damaged table is refused (exit 2, naming the file and the rebuild command); the
// special values; and (slow) over all 2^32 inputs the model reproduces the H200 probe's ulp
// histogram against 1/x correctly rounded, bin for bin, with 0 special-class mismatches and no
// step up between neighbouring inputs of one sign.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

// A copy of the committed table and sidecar in a fresh directory; returns the .bin path.
std::string copy_table(const fs::path& dir) {
  const std::string src = rcp_table_path();
  fs::copy_file(src, dir / "rcp_approx_ftz.bin");
  fs::copy_file(src.substr(0, src.size() - 4) + ".json", dir / "rcp_approx_ftz.json");
  return (dir / "rcp_approx_ftz.bin").string();
}

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

// ---- the H200 histogram, over all 2^32 inputs

namespace {

// What scripts/gpu/mufu_probe.cu's k_sweep bins for rcp: the distance in ulps (ordered bits) of the
// unit's result from 1/x correctly rounded, with the unit's FTZ on input (subnormal -> +-0) and
// output (below 2^-126 -> +-0), clipped to -8..8; specials (zero, inf) agree when both are the
// same class. NaN inputs are skipped; bin 17 counts special-class mismatches.
constexpr int kBins = 18;
int64_t ordered(uint32_t b) { return (b & 0x80000000u) ? -int64_t(b & 0x7FFFFFFFu) : int64_t(b); }

int probe_bin(uint32_t b, uint32_t yb) {
  const float x = f32_from_bits(b), y = f32_from_bits(yb);
  const bool sub = std::fabs(x) < 1.17549435e-38f && x != 0.0f;
  const float xin = sub ? std::copysign(0.0f, x) : x;
  float r = 1.0f / xin;  // IEEE division: correctly rounded, subnormal results included
  if (std::fabs(r) < 1.17549435e-38f) r = std::copysign(0.0f, r);
  const uint32_t rb = f32_bits(r);
  if (std::isfinite(y) && std::isfinite(r) && y != 0.0f && r != 0.0f) {
    const int64_t d = std::clamp<int64_t>(ordered(yb) - ordered(rb), -8, 8);
    return static_cast<int>(d) + 8;
  }
  return (yb == rb || (std::isnan(y) && std::isnan(r)) || (y == 0.0f && r == 0.0f)) ? 8 : 17;
}

}  // namespace

TEST(MufuSlow, ReproducesTheH200HistogramOverAll2to32Inputs) {
  const json probe = read_json_input(data_dir() + "/gpu/mufu/2026-12-01/mufu_probe.json", "probe");
  json unit;
  for (const auto& u : probe.at("units"))
    if (u.at("unit") == "rcp.approx.ftz.f32") unit = u;
  ASSERT_TRUE(unit.is_object());
  const uint8_t* table = rcp_table();
  constexpr uint64_t kChunk = uint64_t(1) << 24;
  struct Part {
    std::array<uint64_t, kBins> hist{};
    uint64_t up = 0;  // steps x -> next float up (same sign, both normal results) where rcp grows
  };
  std::vector<Part> parts(chunk_count(uint64_t(1) << 32, kChunk));
  Stopwatch sw;
  parallel_chunks(uint64_t(1) << 32, kChunk, 0, [&](uint64_t c, uint64_t b, uint64_t e) {
    Part& p = parts[c];
    for (uint64_t i = b; i < e; ++i) {
      const uint32_t x = static_cast<uint32_t>(i);
      if ((x & 0x7FFFFFFFu) > 0x7F800000u) continue;  // NaN: not binned by the probe
      const uint32_t y = f32_bits(rcp_approx_ftz(f32_from_bits(x), table));
      ++p.hist[size_t(probe_bin(x, y))];
      // Positive x: x + 1 ulp is the next float up; rcp must not grow (negative x: by symmetry).
      if (x < 0x7F800000u &&
          f32_from_bits(f32_bits(rcp_approx_ftz(f32_from_bits(x + 1), table))) > f32_from_bits(y) &&
          x != 0)
        ++p.up;
    }
  });
  std::array<uint64_t, kBins> hist{};
  uint64_t up = 0;
  for (const Part& p : parts) {
    for (int k = 0; k < kBins; ++k) hist[size_t(k)] += p.hist[size_t(k)];
    up += p.up;
  }
  std::string got;
  for (int k = 0; k < 17; ++k) got += fmt::format("{}{}", k ? " " : "", hist[size_t(k)]);
  std::printf(
      "rcp_approx_ftz vs 1/x over all non-NaN inputs, ulps -8..8: %s; special mismatches %llu; "
      "steps up (x > 0) %llu; %.1f s\n",
      got.c_str(), static_cast<unsigned long long>(hist[17]), static_cast<unsigned long long>(up),
      sw.seconds());
  const auto& want = unit.at("ulp_hist_m8_to_p8");
  ASSERT_EQ(want.size(), 17u);
  for (int k = 0; k < 17; ++k)
    EXPECT_EQ(hist[size_t(k)], want[size_t(k)].get<uint64_t>()) << "bin " << k - 8;
  EXPECT_EQ(hist[17], unit.at("special_mismatch").get<uint64_t>());
  EXPECT_EQ(hist[17], 0u);
  EXPECT_EQ(up, 0u);  // the H200 measured 0 monotonicity violations
}
