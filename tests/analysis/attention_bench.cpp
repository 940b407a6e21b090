// attention_bench.cpp: throughput of `fa4sim attention` against this CPU's float32 FMA peak.
//
// BM_Fp32FmaPeak measures the peak instead of assuming a clock: each thread runs 12 independent
// chains of 8-wide FMAs (_mm256_fmadd_ps; 12 chains cover the FMA latency x 2 pipes of Zen 3 /
// Skylake), 2 FLOP per lane per FMA. The rate is over CPU time (a shared machine steals wall
// time); the 2-core peak is the per-thread rate x 2.
// BM_AttentionForward runs a small E4M3 configuration end to end (model + both float64
// references) and reports the executed float32 and float64 GEMM FLOP per second.
// BM_AttentionDefaultGemm runs `fa4sim attention`'s default shape (batch 1, heads 8, seq 1024,
// d 128, bf16, the error split) on one thread and reports its matrix products' rates from the
// run's own phase times (timings.gemm_gflop_per_cpu_s: FLOPs over the thread CPU seconds of each
// product), each against the float32 FMA peak measured inside the same benchmark just before
// (float64 against half of it: 4 lanes per vector instead of 8).
//   build-x/tests/attention_bench --benchmark_filter='Fp32FmaPeak|AttentionForward|DefaultGemm'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "fa4sim/analysis/attention.h"
#include "fa4sim/util/report.h"

namespace {

#if defined(__AVX2__) && defined(__FMA__)
constexpr int kChains = 12, kIters = 1 << 16;
// One block of the peak loop: kIters x kChains 8-wide FMAs; returns the FLOPs done.
__attribute__((noinline)) double fma_peak_block() {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int it = 0; it < kIters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  for (int i = 0; i < kChains; ++i) benchmark::DoNotOptimize(acc[i]);
  return double(kIters) * kChains * 16;
}
#endif

void BM_Fp32FmaPeak(benchmark::State& state) {
#if defined(__AVX2__) && defined(__FMA__)
  double flops = 0;
  for (auto _ : state) flops += fma_peak_block();
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void BM_AttentionDefaultGemm(benchmark::State& state) {
#if defined(__AVX2__) && defined(__FMA__)
  fa4sim::AttentionConfig c;  // the CLI's defaults: the default shape
  c.threads = 1;
  std::vector<double> peak, s, pv, fp32, ref, cpu;  // per iteration; the counters are medians
  for (auto _ : state) {
    double flops = 0;  // the peak over 0.25 s of this thread's CPU time, right before the run
    const double t0 = fa4sim::thread_cpu_seconds();
    while (fa4sim::thread_cpu_seconds() - t0 < 0.25) flops += fma_peak_block();
    const double p = flops / (fa4sim::thread_cpu_seconds() - t0) * 1e-9;
    const double t1 = fa4sim::thread_cpu_seconds();
    const auto r = fa4sim::run_attention(c);
    cpu.push_back(fa4sim::thread_cpu_seconds() - t1);
    const auto& g = r.report.timings["gemm_gflop_per_cpu_s"];
    peak.push_back(p);
    s.push_back(100 * g["s_fp32"].get<double>() / p);
    pv.push_back(100 * g["pv_fp32"].get<double>() / p);
    fp32.push_back(100 * g["fp32"].get<double>() / p);
    ref.push_back(100 * g["ref_fp64"].get<double>() / (p / 2));
  }
  state.counters["peak GFLOP/s"] = median(peak);
  state.counters["S fp32 %"] = median(s);
  state.counters["PV fp32 %"] = median(pv);
  state.counters["fp32 GEMM %"] = median(fp32);
  state.counters["ref fp64 %"] = median(ref);
  state.counters["run CPU s"] = median(cpu);
#else
  state.SkipWithError("built without AVX2/FMA");
#endif
}
BENCHMARK(BM_AttentionDefaultGemm)->Iterations(5)->Unit(benchmark::kSecond);

}  // namespace
