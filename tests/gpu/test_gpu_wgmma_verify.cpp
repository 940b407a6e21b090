// gpu_wgmma_verify host logic without a device: the input classes (exact class exactly
// representable, specials where they belong, deterministic), the candidate lists, the sample rows
// and their host re-check, the pass rule, the report, and exit code 3 without a device; and, on
// request, a CPU sample of the device inputs for MMA-Sim (CpuSampleOfTheDeviceInputs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_wgmma_verify.h"
#include "fa4sim/gpu/wgmma_inputs.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

using namespace fa4sim;

namespace {
constexpr WgmmaInput kAll[] = {WgmmaInput::bf16, WgmmaInput::fp16, WgmmaInput::e4m3,
                               WgmmaInput::e5m2};

const Format& format_of(WgmmaInput in) {
  switch (in) {
    case WgmmaInput::bf16: return kBF16;
    case WgmmaInput::fp16: return kFP16;
    case WgmmaInput::e4m3: return kE4M3;
    case WgmmaInput::e5m2: return kE5M2;
  }
  return kBF16;
}

// The host model's D for tiles [0, tiles) of `seed`, row-major over (tile, row, col).
std::vector<uint32_t> host_d(WgmmaInput in, uint64_t seed, uint64_t tiles) {
  const int k = wgmma_k(in);
  const WgmmaModel h = wgmma_model_hopper(in);
  std::vector<uint32_t> d(tiles * kWgmmaTileDots);
  for (size_t i = 0; i < d.size(); ++i) {
    const uint64_t tile = i / kWgmmaTileDots;
    const int row = int(i % kWgmmaTileDots) / 64, col = int(i % 64);
    uint16_t a[kWgmmaMaxK], b[kWgmmaMaxK];
    for (int j = 0; j < k; ++j) {
      a[j] = wgmma_input_ab(in, seed, tile, 0, row, j);
      b[j] = wgmma_input_ab(in, seed, tile, 1, col, j);
    }
    d[i] = wgmma_dot(h, in, a, b, wgmma_input_c(in, seed, tile, row, col));
  }
  return d;
}
}  // namespace

TEST(GpuWgmmaVerify, InputClasses) {
  for (WgmmaInput in : kAll) {
    const Format& f = format_of(in);
    const int k = wgmma_k(in);
    int specials = 0, subnormals = 0;
    for (uint64_t tile = 0; tile < 16; ++tile) {
      const int cls = int(tile % kWgmmaClasses);
      for (int r = 0; r < 64; ++r)
        for (int j = 0; j < k; ++j)
          for (int s = 0; s < 2; ++s) {
            const uint16_t x = wgmma_input_ab(in, 1, tile, s, r, j);
            EXPECT_EQ(x, wgmma_input_ab(in, 1, tile, s, r, j));  // counter-based
            const float v = decode(f, x);
            if (cls == 0) {  // small integers, exactly
              ASSERT_TRUE(std::isfinite(v));
              EXPECT_EQ(v, std::round(v));
              EXPECT_LE(std::fabs(v), 7.0f);
            }
            if (!std::isfinite(v)) {
              ++specials;
              EXPECT_EQ(cls, 6) << wgmma_input_name(in) << " tile " << tile;
            }
            if (v != 0 && std::fabs(v) < f.min_normal) ++subnormals;
          }
    }
    EXPECT_GT(specials, 0) << wgmma_input_name(in);
    EXPECT_GT(subnormals, 0) << wgmma_input_name(in);
    // Class "cancel": A's pairs are x, -x and B's pairs equal.
    EXPECT_EQ(wgmma_input_ab(in, 3, 2, 0, 5, 1) ^ wgmma_input_ab(in, 3, 2, 0, 5, 0),
              1u << (f.total_bits - 1));
    EXPECT_EQ(wgmma_input_ab(in, 3, 2, 1, 9, 3), wgmma_input_ab(in, 3, 2, 1, 9, 2));
    // C of either sign in class "normal".
    std::set<uint32_t> signs;
    for (int c = 0; c < 64; ++c) signs.insert(wgmma_input_c(in, 1, 1, 0, c) >> 31);
    EXPECT_EQ(signs.size(), 2u);
  }
}

TEST(GpuWgmmaVerify, CandidatesAndSampleRows) {
  for (WgmmaInput in : kAll) {
    const WgmmaCandidate* c = wgmma_candidates(in);
    EXPECT_STREQ(c[0].name, "mmasim");
    const WgmmaModel h = wgmma_model_hopper(in);
    EXPECT_EQ(c[0].model.frac_bits, h.frac_bits);
    EXPECT_EQ(c[0].model.out_frac_bits, h.out_frac_bits);
    // Sample rows with D = the host model: 0 mismatches; one flipped bit: 1.
    const int k = wgmma_k(in);
    const std::vector<uint32_t> d = host_d(in, 9, 2);
    auto rows = wgmma_sample_rows(in, 9, d);
    ASSERT_EQ(rows.size(), d.size() * size_t(2 * k + 4));
    EXPECT_EQ(wgmma_sample_mismatches(in, h, rows), 0u);
    rows[size_t(2 * k + 2)] ^= 1u;  // D of row 0, low bit
    EXPECT_EQ(wgmma_sample_mismatches(in, h, rows), 1u);
  }
}

TEST(GpuWgmmaVerify, PassRuleAndReport) {
  GpuWgmmaResult r;
  r.input = WgmmaInput::e5m2;
  r.tiles = 1;
  r.dots = kWgmmaTileDots;
  for (int s = 0; s < kWgmmaCandidateSets; ++s) {
    GpuWgmmaSet set;
    set.name = kWgmmaCandidates8[s].name;
    set.per_class.assign(kWgmmaClasses, 0);
    r.sets.push_back(set);
  }
  r.sets[3].total = 5;  // an alternative set failing does not fail the check
  EXPECT_TRUE(gpu_wgmma_passed({r}));
  GpuWgmmaResult bad = r;
  bad.sets[0].total = 1;
  EXPECT_FALSE(gpu_wgmma_passed({bad}));
  bad = r;
  bad.exact_class_mismatches = 1;
  EXPECT_FALSE(gpu_wgmma_passed({bad}));
  bad = r;
  bad.host_sample_mismatches = 2;
  EXPECT_FALSE(gpu_wgmma_passed({bad}));
  const Report rep = gpu_wgmma_report(GpuWgmmaOptions{}, {r}, gpu::DeviceInfo{});
  EXPECT_EQ(rep.results.at("bit_exact"), true);
  EXPECT_EQ(rep.results.at("types").at(0).at("sets").size(), size_t(kWgmmaCandidateSets));
}

TEST(GpuWgmmaVerify, NoDeviceIsExitCode3) {
  if (gpu::available()) GTEST_SKIP() << "a CUDA device is present";
  GpuWgmmaOptions o;
  o.tiles = 1;
  try {
    run_gpu_wgmma_verify(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitNoGpu);
  }
}

// With FA4SIM_WGMMA_CPU_SAMPLE=DIR: writes DIR/wgmma-<type>.npy for the first 64 tiles of seed 1
// (every class 8 times, 262144 dot products per type) with the HOST model's D, in the format of
// `gpu verify --sample`, so that `scripts/check/check_wgmma_mmasim.py --check DIR` compares MMA-Sim
// with fa4sim's model on the GPU check's own inputs, before any GPU run.
// Not part of the default run: `--gtest_also_run_disabled_tests --gtest_filter=*CpuSample*`.
TEST(GpuWgmmaVerify, DISABLED_CpuSampleOfTheDeviceInputs) {
  const char* dir = std::getenv("FA4SIM_WGMMA_CPU_SAMPLE");
  if (dir == nullptr) GTEST_SKIP() << "FA4SIM_WGMMA_CPU_SAMPLE not set";
  std::filesystem::create_directories(dir);
  constexpr uint64_t kTiles = 64;
  for (WgmmaInput in : kAll) {
    const int k = wgmma_k(in);
    const std::vector<uint32_t> d = host_d(in, 1, kTiles);
    const auto rows = wgmma_sample_rows(in, 1, d);
    write_npy(std::string(dir) + "/wgmma-" + wgmma_input_name(in) + ".npy", NpyType::u16,
              {d.size(), uint64_t(2 * k + 4)}, rows.data(), rows.size() * 2);
  }
}

// The run can tell each alternative set from set 0 only where they differ: on the first 16 tiles
// (every class twice) each alternative gives other bits than set 0 somewhere (but the two that
// cannot differ for fp16). Prints how many dot products differ per set and class.
TEST(GpuWgmmaVerify, EveryAlternativeDiffersFromTheModelOnTheInputs) {
  constexpr uint64_t kTiles = 16;
  for (WgmmaInput in : kAll) {
    const int k = wgmma_k(in);
    const WgmmaCandidate* sets = wgmma_candidates(in);
    std::vector<std::vector<uint64_t>> differ(kWgmmaCandidateSets,
                                              std::vector<uint64_t>(kWgmmaClasses, 0));
    for (uint64_t i = 0; i < kTiles * kWgmmaTileDots; ++i) {
      const uint64_t tile = i / kWgmmaTileDots;
      const int row = int(i % kWgmmaTileDots) / 64, col = int(i % 64);
      uint16_t a[kWgmmaMaxK], b[kWgmmaMaxK];
      for (int j = 0; j < k; ++j) {
        a[j] = wgmma_input_ab(in, 1, tile, 0, row, j);
        b[j] = wgmma_input_ab(in, 1, tile, 1, col, j);
      }
      const uint32_t c = wgmma_input_c(in, 1, tile, row, col);
      const uint32_t d0 = wgmma_dot(sets[0].model, in, a, b, c);
      for (int s = 1; s < kWgmmaCandidateSets; ++s)
        differ[size_t(s)][tile % kWgmmaClasses] += wgmma_dot(sets[s].model, in, a, b, c) != d0;
    }
    for (int s = 1; s < kWgmmaCandidateSets; ++s) {
      uint64_t total = 0;
      std::string per;
      for (uint64_t v : differ[size_t(s)]) {
        total += v;
        per += " " + std::to_string(v);
      }
      std::printf("%s %-13s differs from set 0 on %6llu of %llu (per class:%s)\n",
                  wgmma_input_name(in), sets[s].name, (unsigned long long)total,
                  (unsigned long long)(kTiles * kWgmmaTileDots), per.c_str());
      // fp16 cannot show the zero exponent or an overflow (kWgmmaCandidates16's comment).
      const std::string name = sets[s].name;
      if (in == WgmmaInput::fp16 && (name == "zero-exp-126" || name == "sat-overflow"))
        EXPECT_EQ(total, 0u) << name;
      else
        EXPECT_GT(total, 0u) << wgmma_input_name(in) << " " << name;
    }
  }
}
