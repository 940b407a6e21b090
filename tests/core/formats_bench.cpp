// formats_bench.cpp: throughput of the number-format conversions (Google Benchmark).
//
// BM_Encode/<format>/<mode>: encode_array over kBenchN float32 inputs on one thread; the inputs
//   are the bit patterns i * 0x9E3779B1 mod 2^32 (a scrambled cover of every float32 class,
//   NaN and inf included). scripts/bench/bench_formats.py casts the SAME inputs with ml_dtypes in the
//   same run and writes both to data/bench/formats.{json,md}.
// BM_AllFloat32VsRef/<format>: the 10 s target: all 2^32 float32 inputs converted with
//   encode_array AND compared with the table reference (formats_ref.h), on 2 threads, wall time.
#include <benchmark/benchmark.h>

#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/ref/formats_ref.h"

namespace {

using namespace fa4sim;

constexpr size_t kBenchN = size_t(1) << 22;

const std::vector<float>& bench_inputs() {
  static const std::vector<float> in = [] {
    std::vector<float> v(kBenchN);
    for (size_t i = 0; i < kBenchN; ++i) v[i] = f32_from_bits(uint32_t(i) * 0x9E3779B1u);
    return v;
  }();
  return in;
}

template <class T>
void encode_bench(benchmark::State& st, const Format& f, Overflow ov) {
  const auto& in = bench_inputs();
  std::vector<T> out(in.size());
  for (auto _ : st) {
    encode_array(f, in, std::span<T>(out), ov);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(in.size()));
}

// Outputs of the format's width, as a caller storing P or Q/K/V would.
void BM_Encode(benchmark::State& st, const Format* f, Overflow ov) {
  if (f->total_bits <= 8)
    encode_bench<uint8_t>(st, *f, ov);
  else
    encode_bench<uint16_t>(st, *f, ov);
}

void BM_AllFloat32VsRef(benchmark::State& st, const Format* f) {
  for (auto _ : st) {
    const SweepResult r = sweep_all_float32(*f, Overflow::satfinite, 2);
    st.counters["mismatches"] = double(r.mismatches);
    st.counters["sweep_s"] = r.seconds;
    if (r.mismatches) st.SkipWithError("mismatches against the reference");
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, e4m3 / satfinite, &kE4M3, Overflow::satfinite);
BENCHMARK_CAPTURE(BM_Encode, e4m3 / ieee, &kE4M3, Overflow::ieee);
BENCHMARK_CAPTURE(BM_Encode, e5m2 / satfinite, &kE5M2, Overflow::satfinite);
BENCHMARK_CAPTURE(BM_Encode, e5m2 / ieee, &kE5M2, Overflow::ieee);
BENCHMARK_CAPTURE(BM_Encode, bf16 / satfinite, &kBF16, Overflow::satfinite);
BENCHMARK_CAPTURE(BM_Encode, bf16 / ieee, &kBF16, Overflow::ieee);
BENCHMARK_CAPTURE(BM_Encode, fp16 / satfinite, &kFP16, Overflow::satfinite);
BENCHMARK_CAPTURE(BM_Encode, fp16 / ieee, &kFP16, Overflow::ieee);
BENCHMARK_CAPTURE(BM_AllFloat32VsRef, e4m3, &kE4M3)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_AllFloat32VsRef, e5m2, &kE5M2)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_AllFloat32VsRef, bf16, &kBF16)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(BM_AllFloat32VsRef, fp16, &kFP16)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);
