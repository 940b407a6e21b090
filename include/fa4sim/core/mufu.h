// mufu.h: bit-exact CPU model of the H200's MUFU reciprocal, `rcp.approx.ftz.f32`.
//
// Models: what upstream's sm90 forward normalises O with (`cute.arch.rcp_approx(row_sum)`,
// flash_attn/cute, docs/divergences.md), as the hardware computes it. No public bit-exact
// description exists; the model is read off the GPU (docs/mufu.md): measured on an H200 over all
// 2^32 inputs by scripts/gpu/mufu_probe.cu (data/gpu/mufu/2026-12-01), the result depends on the
// input's mantissa alone,
//   rcp(+-m 2^e) = +-rcp(m) 2^-e      m in [1, 2), wherever input and result are normal
// (0 failures over the 4,227,858,434 such inputs), and rcp(m) is within 1 ulp of 1/m correctly
// rounded. So the model is the correctly rounded 1.0f / m plus a measured correction in
// {-1, 0, +1} ulps per mantissa (2^23 entries of 2 bits: data/mufu/rcp_approx_ftz.bin, built by
// scripts/datagen/mufu_table.py), then the exponent, then the `.ftz` flush.
// Does not model: ex2.approx and lg2.approx (not yet bit-exact; docs/mufu.md says what is known).
//
// ---- Contract: rcp_approx_ftz(x, table)
// Inputs:       any float32 bit pattern; `table` = the 2^21 packed bytes (rcp_table() below).
// Bit-exact vs: rcp.approx.ftz.f32 on the H200 for every non-NaN input by construction from the
//               measurement above; `fa4sim gpu verify --what mufu` compares all 2^32 inputs with the
//               GPU; tests/core/test_mufu.cpp reproduces the probe's ulp histogram over all 2^32.
// Max error vs: 1/x correctly rounded (FTZ): 1 ulp (measured: 86.9 % exact, 6.5 % each +-1).
// Special values: +-0 and subnormal inputs (read as +-0) -> +-inf; +-inf -> +-0; results below
//               2^-126 (|x| > 2^126) -> +-0 (flushed, sign kept); NaN -> 0x7FFFFFFF, the GPU's
//               canonical NaN: UNVERIFIED on the hardware (the probe compared NaN outputs by
//               isnan only; `gpu verify --what mufu` counts NaN inputs in their own column).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fa4sim/core/exp2_emu.h"  // kGpuCanonicalNaN
#include "fa4sim/core/hd.h"

namespace fa4sim {

inline constexpr uint32_t kRcpTableEntries = uint32_t(1) << 23;   // one per float32 mantissa
inline constexpr uint32_t kRcpTableBytes = kRcpTableEntries / 4;  // 2 bits each
// The NaN the model returns (the GPU's canonical NaN, kGpuCanonicalNaN; unverified for MUFU).
inline constexpr uint32_t kRcpNaN = kGpuCanonicalNaN;

// The correction of mantissa j (x = 1 + j 2^-23): bits(rcp(x)) - bits(1.0f / x), in ulps.
// Byte j/4 holds entries j..j+3 from its low bits up, code = delta + 1 (code 3 never occurs: the
// loader refuses a table holding it).
FA4_HD int rcp_table_delta(const uint8_t* table, uint32_t j) {
  return static_cast<int>((table[j >> 2] >> ((j & 3u) * 2u)) & 3u) - 1;
}

FA4_HD float rcp_approx_ftz(float x, const uint8_t* table) {
  const uint32_t u = f32_bits(x), sign = u & 0x80000000u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return f32_from_bits(kRcpNaN);             // NaN
  if (a == 0x7F800000u) return f32_from_bits(sign);               // 1/+-inf = +-0
  if (a < 0x00800000u) return f32_from_bits(sign | 0x7F800000u);  // +-0, subnormal (ftz) -> +-inf
  const uint32_t j = a & 0x007FFFFFu;
  const float m = f32_from_bits(0x3F800000u | j);  // the mantissa, [1, 2)
  // 1/m in (0.5, 1]: bits are positive and ordered, so an integer add moves by whole ulps (across
  // the binade at 1 as well).
  const uint32_t r =
      static_cast<uint32_t>(static_cast<int32_t>(f32_bits(1.0f / m)) + rcp_table_delta(table, j));
  // rcp(m 2^e) = rcp(m) 2^-e: subtract e = field - 127 from rcp(m)'s exponent field. The largest
  // result field is 127 + 126 (x = 2^-126), never inf; field <= 0 is below 2^-126: flushed.
  const int field = static_cast<int>(r >> 23) - (static_cast<int>(a >> 23) - 127);
  if (field <= 0) return f32_from_bits(sign);
  return f32_from_bits(sign | (static_cast<uint32_t>(field) << 23) | (r & 0x007FFFFFu));
}

// ---- the measured table (host only; src/core/mufu.cpp)

// The packed table from data_dir()/mufu/rcp_approx_ftz.bin, read and checked once (size, the CRC-32
// in the .json sidecar, no code 3). A missing or damaged table throws Error (exit 2) naming the
// file and the command that rebuilds it; nothing falls back to 1/x.
const uint8_t* rcp_table();
// Reads and checks the table at `bin_path` (sidecar: the same path ending in .json) into `out`.
// What rcp_table() does, without caching (the tests give it damaged copies).
void load_rcp_table(const std::string& bin_path, std::vector<uint8_t>& out);
// The table's path under data_dir(), and the command that rebuilds it from the probe's output.
std::string rcp_table_path();
inline constexpr const char* kRcpTableRebuild = "python3 scripts/datagen/mufu_table.py";
uint32_t crc32_ieee(const uint8_t* data, size_t n);

// rcp_approx_ftz(x, rcp_table()).
float rcp_approx_ftz(float x);

}  // namespace fa4sim
