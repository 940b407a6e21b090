// mufu.h: bit-exact CPU models of the H200's MUFU reciprocal, exp2 and log2:
// `rcp.approx.ftz.f32`, `ex2.approx.ftz.f32`, `lg2.approx.ftz.f32`.
//
// Models: what upstream's sm90 forward normalises O with (`cute.arch.rcp_approx(row_sum)`), the
// exp2 it runs where it does not emulate (`cute.math.exp2(..., fastmath=True)`) and the log2 of its
// LSE (`cute.math.log2(row_sum, fastmath=True)`) (flash_attn/cute, docs/divergences.md), as the
// hardware computes them. No public bit-exact description exists; each model is read off the GPU
// (docs/mufu.md), one table of 2^23 results per input sign or range, and the rule that builds every
// other result from the table, each rule tested over every input on the H200 with 0 failures:
//   rcp(+-m 2^e) = +-rcp(m) 2^-e, m in [1, 2), wherever input and result are normal
//       (scripts/gpu/mufu_probe.cu, data/gpu/mufu/2026-12-01: 0 failures over 4,227,858,434);
//   ex2(x) = Tpos[j] 2^i (x > 0), Tneg[j] 2^-i (x < 0), |x| = i + g, j = floor(g 2^23): the unit
//       reads |x| as fixed point with 23 fraction bits, truncated, one table per sign
//       (scripts/gpu/mufu_structure.cu, data/gpu/mufu/2026-12-02-structure: 0 failures over the
//       2 x 1,115,684,864 inputs with 2^-126 <= |x| < 128);
//   lg2(m 2^e) = RZ(e + y0[j]) for e >= 0, RZ(e + 1 + y1[j]) for e < 0, y0[j] = lg2(m),
//       y1[j] = lg2(m / 2), m = 1 + j 2^-23, the sum exact and rounded once toward zero (same run:
//       0 failures over the 2,130,706,432 positive normal inputs).
// Each table is the correctly rounded function (1/x) or the libm one in double rounded to float32
// (exp2, log2), plus a measured correction per entry, packed in data/mufu/ by
// scripts/datagen/mufu_table.py, and rebuilt at load (src/core/mufu.cpp).
// Does not model: the MUFU's other functions (sin, cos, rsqrt, tanh); non-ftz forms.
//
// ---- Contract: rcp_approx_ftz(x, table)
// Inputs:       any float32 bit pattern; `table` = the 2^21 packed bytes (rcp_table() below).
// Bit-exact vs: rcp.approx.ftz.f32 on the H200 for every non-NaN input by construction from the
//               measurement above; `fa4sim gpu verify --what mufu` compares all 2^32 inputs with the
//               GPU (0 mismatches, NaN included, data/gpu/mufu/2026-12-01-verify);
//               tests/core/test_mufu.cpp reproduces the probe's ulp histogram over all 2^32.
// Max error vs: 1/x correctly rounded (FTZ): 1 ulp (measured: 86.9 % exact, 6.5 % each +-1).
// Special values: +-0 and subnormal inputs (read as +-0) -> +-inf; +-inf -> +-0; results below
//               2^-126 (|x| > 2^126) -> +-0 (flushed, sign kept); NaN -> 0x7FFFFFFF, the GPU's
//               canonical NaN (verified on the H200 by `gpu verify --what mufu`).
//
// ---- Contract: ex2_approx_ftz(x, table)
// Inputs:       any float32 bit pattern; `table` = the two decoded 2^23-entry tables
//               (ex2_approx_table() below).
// Bit-exact vs: ex2.approx.ftz.f32 on the H200: the tables are the hardware's results (their bit
//               sums are the GPU's, checked at load), the rule above held for every input with
//               2^-126 <= |x| < 128; the other inputs (zeros, subnormals, |x| >= 128, inf) agree
//               with the probe's special classes (0 mismatches); tests/core/test_mufu.cpp (slow)
//               reproduces the probe's ulp histogram over all 2^32 inputs bin for bin. The proof
//               over all 2^32 inputs, NaN outputs included, is `fa4sim gpu verify --what mufu`
//               (ex2-mufu): 0 mismatches on the H200 (data/gpu/mufu/2026-12-02-verify).
// Max error vs: (float)exp2((double)x), FTZ: 2 ulps (measured: 95.6 % exact, 978,574 inputs -2).
// Special values: +-0 and subnormal inputs -> 1; x >= 128 and +inf -> +inf; -inf -> +0; results
//               below 2^-126 (x <= -126 with Tneg < 1, x <= -127) -> +0; NaN -> 0x7FFFFFFF (both
//               the NaN bits and the +0, not -0, confirmed by gpu verify on the H200).
// Monotone:     never steps down between neighbouring inputs (0 down-steps over all inputs, on the
//               H200 and in the model: tests/core/test_mufu.cpp).
//
// ---- Contract: lg2_approx_ftz(x, table)
// Inputs:       any float32 bit pattern; `table` = the two decoded 2^23-entry tables
//               (lg2_approx_table() below).
// Bit-exact vs: lg2.approx.ftz.f32 on the H200: the tables are the hardware's results (bit sums
//               checked at load), the rule above held for every positive normal input; the test and
//               the proof as for ex2 (lg2-mufu in `gpu verify --what mufu`: 0 mismatches on the
//               H200, data/gpu/mufu/2026-12-02-verify).
// Max error vs: (float)log2((double)x): absolute near x = 1, so large in ulps of results near 0
//               (y1's largest delta: 23,947,836 ulps, x just below 1), a few ulps elsewhere
//               (75.0 % of all non-NaN inputs exact; histogram in docs/mufu.md).
// Special values: +-0 and subnormal inputs -> -inf; +inf -> +inf; x = 1 -> +0; x < 0 (normal or
//               -inf) and NaN -> 0x7FFFFFFF (confirmed by gpu verify on the H200).
// Monotone:     as ex2 (0 down-steps over all inputs, H200 and model).
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
// The NaN the model returns (the GPU's canonical NaN, kGpuCanonicalNaN; what the H200 returns).
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

// ---- ex2.approx.ftz.f32

inline constexpr uint32_t kMufuTableEntries = uint32_t(1) << 23;  // j = 0 .. 2^23 - 1

// The two decoded tables: pos[j] = ex2.approx.ftz.f32(j 2^-23) in [1, 2], neg[j] =
// ex2.approx.ftz.f32(-j 2^-23) in [0.5, 1] (both measured on the H200).
struct Ex2ApproxTable {
  const float* pos = nullptr;
  const float* neg = nullptr;
};

// |x| 2^23 truncated toward zero, as an integer, for |x| in [2^-126, 128) (a = |x|'s bits): |x| =
// (2^23 + frac) 2^(e - 23), e in [-126, 6], so |x| 2^23 = (2^23 + frac) 2^e < 2^30. Its integer
// part's bits are i, its 23 fraction bits j: |x| = i + g with j = floor(g 2^23), the table's index.
FA4_HD uint32_t ex2_fixed(uint32_t a) {
  const uint32_t sig = 0x00800000u | (a & 0x007FFFFFu);
  const int e = static_cast<int>(a >> 23) - 127;
  return e >= 0 ? sig << e : (e > -24 ? sig >> -e : 0u);
}

FA4_HD float ex2_approx_ftz(float x, const Ex2ApproxTable& t) {
  const uint32_t u = f32_bits(x), a = u & 0x7FFFFFFFu;
  const bool neg = (u >> 31) != 0;
  if (a > 0x7F800000u) return f32_from_bits(kGpuCanonicalNaN);  // NaN
  if (a < 0x00800000u) return 1.0f;                             // +-0, subnormal (ftz): 2^0
  if (a >= 0x43000000u) return neg ? 0.0f : f32_from_bits(0x7F800000u);  // |x| >= 128, +-inf
  const uint32_t fixed = ex2_fixed(a);
  const int i = static_cast<int>(fixed >> 23);
  const uint32_t j = fixed & 0x007FFFFFu;
  // Scale the table's result by 2^+-i in its exponent field: exact while the result is normal.
  // Positive: field 127 or 128 plus i <= 127 (inf only if pos[j] were 2 at i = 127); negative:
  // field 126 or 127 minus i, at most 0 (below 2^-126) -> +0, decided before any rounding.
  const uint32_t r = f32_bits(neg ? t.neg[j] : t.pos[j]);
  const int field = static_cast<int>(r >> 23) + (neg ? -i : i);
  if (field <= 0) return 0.0f;
  if (field >= 255) return f32_from_bits(0x7F800000u);
  return f32_from_bits((static_cast<uint32_t>(field) << 23) | (r & 0x007FFFFFu));
}

// Asks the cache for the entry ex2_approx_ftz(x, t) will read (none for the arguments it answers
// without the table). A loop over many arguments calls this for all of them first: the reads of
// the 32 MiB table, at places set by the fraction bits, then miss the cache side by side instead of
// one after the other (Note [Table prefetch] in src/analysis/row_block_sim.cpp). Changes no value.
inline void prefetch_ex2_entry(float x, const Ex2ApproxTable& t) {
  const uint32_t u = f32_bits(x), a = u & 0x7FFFFFFFu;
  if (a < 0x00800000u || a >= 0x43000000u) return;  // NaN, tiny, |x| >= 128: no table read
  const uint32_t j = ex2_fixed(a) & 0x007FFFFFu;
  __builtin_prefetch((u >> 31) != 0 ? t.neg + j : t.pos + j);
}

// ---- lg2.approx.ftz.f32

// The two decoded tables: y0[j] = lg2.approx.ftz.f32(m) in [0, 1], y1[j] = lg2.approx.ftz.f32(m / 2)
// in [-1, 0), m = 1 + j 2^-23 (measured on the H200); every entry is a multiple of 2^-36
// (checked at load).
struct Lg2ApproxTable {
  const float* y0 = nullptr;
  const float* y1 = nullptr;
};
inline constexpr int kLg2FixedBits = 36;  // the sums are exact integers in units of 2^-36

// Index of the highest set bit of v != 0 (integer ops only).
FA4_HD int msb_u64(uint64_t v) {
  int p = 0;
  for (int s = 32; s > 0; s >>= 1)
    if (v >> s) {
      v >>= s;
      p += s;
    }
  return p;
}

// v 2^-36 rounded toward zero to float32 (|v| < 2^62): truncate |v| to its 24 leading bits.
// Every result of lg2 is >= 2^-36 in magnitude, so the float is normal.
FA4_HD float rz_fixed36_to_f32(int64_t v) {
  if (v == 0) return 0.0f;
  const uint32_t sign = v < 0 ? 0x80000000u : 0u;
  const uint64_t mag = v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int p = msb_u64(mag);  // |v| in [2^p, 2^(p+1)): the result's exponent is p - 36
  const uint64_t m24 = p >= 23 ? mag >> (p - 23) : mag << (23 - p);  // RZ: drop the low bits
  const uint32_t field = static_cast<uint32_t>(p - kLg2FixedBits + 127);
  return f32_from_bits(sign | (field << 23) | (static_cast<uint32_t>(m24) & 0x007FFFFFu));
}

FA4_HD float lg2_approx_ftz(float x, const Lg2ApproxTable& t) {
  const uint32_t u = f32_bits(x), a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return f32_from_bits(kGpuCanonicalNaN);  // NaN
  if (a < 0x00800000u) return f32_from_bits(0xFF800000u);       // +-0, subnormal (ftz) -> -inf
  if (u >> 31) return f32_from_bits(kGpuCanonicalNaN);          // x < 0, -inf
  if (a == 0x7F800000u) return x;                               // +inf
  const int e = static_cast<int>(a >> 23) - 127;
  const uint32_t j = a & 0x007FFFFFu;
  // x = m 2^e: e >= 0 adds y0 = lg2(m) in [0, 1] to e; e < 0 adds y1 = lg2(m / 2) in [-1, 0) to
  // e + 1, so the sum never cancels across zero. Both exact in units of 2^-36 (|e| <= 127), then
  // one rounding toward zero (what the H200 does: 0 failures, docs/mufu.md).
  const float y = e >= 0 ? t.y0[j] : t.y1[j];
  const int64_t yi = static_cast<int64_t>(static_cast<double>(y) * 0x1p36);  // exact
  const int64_t v = static_cast<int64_t>(e >= 0 ? e : e + 1) * (int64_t(1) << kLg2FixedBits) + yi;
  return rz_fixed36_to_f32(v);
}

// ---- the measured tables (host only; src/core/mufu.cpp)

// The packed table from data_dir()/mufu/rcp_approx_ftz.bin, read and checked once (size, the CRC-32
// in the .json sidecar, no code 3). A missing or damaged table throws Error (exit 2) naming the
// file and the command that rebuilds it; nothing falls back to 1/x.
const uint8_t* rcp_table();
// Reads and checks the table at `bin_path` (sidecar: the same path ending in .json) into `out`.
// What rcp_table() does, without caching (the tests give it damaged copies).
void load_rcp_table(const std::string& bin_path, std::vector<uint8_t>& out);
// The table's path under data_dir(), and the command that rebuilds it (and the ex2 and lg2 tables)
// from the GPU runs' output.
std::string rcp_table_path();
inline constexpr const char* kRcpTableRebuild = "python3 scripts/datagen/mufu_table.py";
inline constexpr const char* kMufuTableRebuild = kRcpTableRebuild;
uint32_t crc32_ieee(const uint8_t* data, size_t n);

// rcp_approx_ftz(x, rcp_table()).
float rcp_approx_ftz(float x);

// The decoded tables of one unit: two arrays of 2^23 floats (32 MiB each), and a view for the
// FA4_HD model.
struct MufuTables {
  std::vector<float> a, b;  // ex2: pos, neg; lg2: y0, y1
  bool from_cache = false;  // set by load_*_table: read from mufu_cache_dir(), not rebuilt
};

// data_dir()/mufu/ex2_approx_ftz.bin and lg2_approx_ftz.bin (sidecars: .json next to them).
std::string ex2_table_path();
std::string lg2_table_path();
// Read, check (size, CRC-32 in the sidecar, codes), decode, rebuild every entry with std::exp2 /
// std::log2 in double rounded to float32 plus its delta, and check the sums of the entries' bit
// patterns against the hardware's (in the sidecar), so a libm that rounds differently from the
// one the table was measured against is caught. Any failure throws Error (exit 2) naming the file
// and kMufuTableRebuild. `threads` as parallel_chunks (0: all cores).
// Note [MUFU table cache]: a rebuild costs 0.1-0.2 CPU-s per unit, in every process; the rebuilt
// tables are kept in mufu_cache_dir() and read back by the next process. Every check of the
// input above still runs first, so each refusal is the same. A cache file is used only when its
// checksum (over the whole file) holds, it was written by code of the same cache key (the cache
// format and a hash of this module's sources, FA4SIM_MUFU_SOURCE_HASH, taken by CMake) and the
// same C library, it holds byte-identical copies of the input table and its sidecar, and its
// tables' bit sums are the sidecar's hardware sums; anything else is rebuilt in silence (and the
// cache rewritten). Files are written to a temporary name and renamed into place, so concurrent
// processes never read a half-written file, and a unit's other entries are then removed (one
// entry of ~70 MiB per unit); a cache folder that cannot be written is not an error (the tables
// are rebuilt each time).
void load_ex2_table(const std::string& bin_path, MufuTables& out, int threads = 0);
void load_lg2_table(const std::string& bin_path, MufuTables& out, int threads = 0);
// The unit's cache entry for the table at `bin_path` (Note [MUFU table cache]) mapped read-only
// for the rest of the process, what ex2_approx_table() and lg2_approx_table() use before they
// fall back to load_*_table: a read copies and clears 128 MiB per process, about 60 % of a
// cached load's CPU time (perf, `fa4sim attention` on 64 keys). Every check of the input that
// load_*_table makes runs first (the same refusals, thrown), then the checks of the cache file a
// read makes (its size, header, copy of the input, checksum, bit sums). False on a miss (no entry,
// or one that fails a check), with nothing mapped; true with `out` pointing into the mapping,
// never unmapped. The cache writer only renames new files into place, so a mapped file is never
// changed under a process by fa4sim; one changed in place by another program is outside what the
// checks can see.
bool map_cached_ex2_table(const std::string& bin_path, Ex2ApproxTable& out);
bool map_cached_lg2_table(const std::string& bin_path, Lg2ApproxTable& out);
// The cache folder: $FA4SIM_CACHE_DIR when set and not empty; else $XDG_CACHE_HOME/fa4sim; else
// $HOME/.cache/fa4sim; "" (no cache) when none of them is set.
std::string mufu_cache_dir();
// Loaded once (thread-safe), from the paths above (the cache entry mapped when it holds, else
// load_*_table); nothing falls back to exp2 / log2.
Ex2ApproxTable ex2_approx_table();
Lg2ApproxTable lg2_approx_table();

// ex2_approx_ftz(x, ex2_approx_table()), lg2_approx_ftz(x, lg2_approx_table()).
float ex2_approx_ftz(float x);
float lg2_approx_ftz(float x);

// The three measured tables together, as the softmax models take them (core/online_softmax.h's
// SoftmaxParams::mufu): all null = no hardware model (the correctly rounded functions instead).
// mufu_hardware() loads all three once per process (each as above: a missing or damaged table
// throws Error, exit 2, naming the file and kMufuTableRebuild).
struct MufuHardware {
  Ex2ApproxTable ex2;
  Lg2ApproxTable lg2;
  const uint8_t* rcp = nullptr;
  FA4_HD bool loaded() const { return ex2.pos != nullptr && lg2.y0 != nullptr && rcp != nullptr; }
};
MufuHardware mufu_hardware();

}  // namespace fa4sim
