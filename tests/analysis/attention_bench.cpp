// attention_bench.cpp: throughput of `fa4sim attention` against this CPU's float32 FMA peak.
//
// BM_Fp32FmaPeak measures the peak instead of assuming a clock: each thread runs 12 independent
// chains of 8-wide FMAs (_mm256_fmadd_ps; 12 chains cover the FMA latency x 2 pipes of Zen 3 /
// Skylake), 2 FLOP per lane per FMA. The rate is over CPU time (a shared machine steals wall
// time); the 2-core peak is the per-thread rate x 2.
// BM_AttentionForward runs a small E4M3 configuration end to end (model + both float64
// references) and reports the executed float32 and float64 GEMM FLOP per second.
//   build-x/tests/attention_bench --benchmark_filter='Fp32FmaPeak|AttentionForward'
#include <benchmark/benchmark.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "fa4sim/analysis/attention.h"

namespace {

void BM_Fp32FmaPeak(benchmark::State& state) {
#if defined(__AVX2__) && defined(__FMA__)
  constexpr int kChains = 12, kIters = 1 << 16;
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (auto _ : state) {
    for (int it = 0; it < kIters; ++it)
      for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    for (int i = 0; i < kChains; ++i) benchmark::DoNotOptimize(acc[i]);
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(double(state.iterations()) * kIters * kChains * 16,
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
#else
  state.SkipWithError("built without AVX2/FMA");
#endif
}
BENCHMARK(BM_Fp32FmaPeak)
    ->Threads(1)
    ->Threads(2);  // rates over CPU time: robust to a shared machine

void BM_AttentionForward(benchmark::State& state) {
  fa4sim::AttentionConfig c;
  c.batch = 1, c.heads = 4, c.kv_heads = 1, c.d = 128;
  c.seq_q = {1024};
  c.dtypes = {&fa4sim::kE4M3};
  c.threads = int(state.range(0));
  double fp32 = 0, fp64 = 0;
  for (auto _ : state) {
    const auto r = fa4sim::run_attention(c);
    fp32 = r.report.results["perf"]["executed_fp32_flops"].get<double>();
    fp64 = r.report.results["perf"]["executed_fp64_flops"].get<double>();
  }
  state.counters["fp32 GFLOP/s"] = benchmark::Counter(
      fp32 * double(state.iterations()), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.counters["fp64 GFLOP/s"] = benchmark::Counter(
      fp64 * double(state.iterations()), benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_AttentionForward)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kSecond);

}  // namespace
