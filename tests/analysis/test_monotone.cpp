// monotone_steps (include/fa4sim/analysis/monotone.h): the value order of float32 inputs, the
// counting of planted down-steps (and of NaN steps apart), and (slow) ex2_emu degrees 0-5 over
// every float32 input: each down-step it reports is re-checked with the scalar ex2_emu, and the
// emulation's domain x < 128 has none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "fa4sim/analysis/monotone.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/util/error.h"

using namespace fa4sim;

namespace {

// The value-order index of a non-NaN float32 (inverse of ordered_float_bits).
uint64_t index_of(float x) {
  const uint32_t b = f32_bits(x);
  return (b & 0x80000000u) ? uint64_t(0xFF800000u - b) : uint64_t(b) + 0x7F800001u;
}

void apply(const float* in, float* out, size_t n, float (*f)(float)) {
  for (size_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

}  // namespace

TEST(Monotone, ValueOrder) {
  EXPECT_EQ(kOrderedFloats, 4278190082u);                   // 2^32 minus the 2^24 - 2 NaN patterns
  EXPECT_EQ(ordered_float_bits(0), 0xFF800000u);            // -inf
  EXPECT_EQ(ordered_float_bits(0x7F800000u), 0x80000000u);  // -0
  EXPECT_EQ(ordered_float_bits(0x7F800001u), 0x00000000u);  // +0
  EXPECT_EQ(ordered_float_bits(kOrderedFloats - 1), 0x7F800000u);  // +inf
  for (float x : {-3.0f, -0.0f, 0.0f, 1e-40f, 1.0f, 7.5e37f})
    EXPECT_EQ(ordered_float_bits(index_of(x)), f32_bits(x));
  for (uint64_t k = 0; k + 1 < kOrderedFloats; k += 0x01234567u)
    EXPECT_LE(f32_from_bits(ordered_float_bits(k)), f32_from_bits(ordered_float_bits(k + 1))) << k;
}

TEST(Monotone, CountsPlantedDownStepsAndNanStepsApart) {
  // f(x) = x, except f(1) = 2 (one step down: 1 -> next(1)) and f(1.5) = NaN (two NaN steps).
  auto fn = [](const float* in, float* out, size_t n) {
    apply(in, out, n, [](float x) {
      if (x == 1.0f) return 2.0f;
      if (x == 1.5f) return std::numeric_limits<float>::quiet_NaN();
      return x;
    });
  };
  const uint64_t b = index_of(1.0f) - 100000, e = index_of(2.0f);  // several chunks of 2^20
  for (int threads : {1, 2}) {
    const MonotoneResult r = monotone_steps(fn, 3.0f, threads, b, e);
    EXPECT_EQ(r.down, 1u);
    EXPECT_EQ(r.down_below, 1u);
    EXPECT_EQ(r.nan_steps, 2u);
    EXPECT_EQ(r.steps + r.nan_steps, e - b);
    ASSERT_EQ(r.first.size(), 1u);
    EXPECT_EQ(r.first[0].x, f32_bits(1.0f));
    EXPECT_EQ(r.first[0].next, f32_bits(1.0f) + 1);
    EXPECT_EQ(r.first[0].y, f32_bits(2.0f));
  }
  // Outside the domain: counted in down, not in down_below.
  EXPECT_EQ(monotone_steps(fn, 1.0f, 2, b, e).down_below, 0u);
  // -0 -> +0 is a step: f = 1 at -0 and 0 at +0 steps down there.
  auto sign = [](const float* in, float* out, size_t n) {
    apply(in, out, n, [](float x) { return std::signbit(x) ? 1.0f : 0.0f; });
  };
  EXPECT_EQ(monotone_steps(sign, 1.0f, 1, index_of(-0.0f), index_of(0.0f)).down, 1u);
  EXPECT_THROW(monotone_steps(fn, 1.0f, 1, 5, 4), Error);
  EXPECT_THROW(ex2_emu_monotone(6, 1), Error);
}

// Every degree over all 2^32 - 2^24 + 2 non-NaN inputs. Prints the report (every count, the first
// down-steps); docs/mufu.md quotes it.
TEST(MonotoneSlow, Ex2EmuAllDegreesAllInputs) {
  const std::vector<int> degrees{0, 1, 2, 3, 4, 5};
  Stopwatch sw;
  const Report rep = ex2_emu_monotone_report(degrees, 0);
  for (const Table& t : rep.tables) std::printf("%s\n", render_text(t).c_str());
  std::printf("%.1f s\n", sw.seconds());
  for (const auto& d : rep.results.at("degrees")) {
    const int deg = d.at("degree").get<int>();
    EXPECT_EQ(d.at("steps").get<uint64_t>() + d.at("nan_steps").get<uint64_t>(),
              kOrderedFloats - 1);
    for (const auto& s : d.at("first_down")) {
      const float x =
          f32_from_bits(uint32_t(std::stoul(s.at("x").get<std::string>(), nullptr, 16)));
      const float nx =
          f32_from_bits(uint32_t(std::stoul(s.at("next").get<std::string>(), nullptr, 16)));
      EXPECT_LT(ex2_emu(nx, deg), ex2_emu(x, deg)) << deg;  // re-checked with the scalar form
      EXPECT_EQ(std::nextafter(x, INFINITY), nx);
    }
    EXPECT_EQ(d.at("down_below_128").get<uint64_t>(), 0u) << "degree " << deg;
  }
}
