// array_bench.cpp: the C++ side of scripts/bench/bench_python.py. Times the library's array functions
// on one thread, on inputs read from a raw float32 file, with preallocated outputs:
//   python_array_bench FILE REPS  ->  one JSON line {"encode_e4m3_s": [...], "ex2_emu3_s": [...],
//   "ex2_emu3_new_s": [...], "encode_e4m3_cpu_s": [...], "ex2_emu3_cpu_s": [...],
//   "ex2_emu3_new_cpu_s": [...]}
// (wall and process-CPU seconds per call, REPS calls each, alternating; CPU time is what a
// shared, loaded machine does not inflate). ex2_emu3_new, for context: ex2_emu into a new[]
// output per call, allocated, written and freed inside the timing (what fresh memory costs a C++
// caller: glibc maps a 64 MiB block anew each time, zero-filled by the kernel on first touch).
// The script times fa4sim.encode and fa4sim.ex2_emu on the same inputs in the same run.
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: python_array_bench FILE.f32 REPS\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary | std::ios::ate);
  const size_t n = size_t(f.tellg()) / sizeof(float);
  std::vector<float> x(n), y(n);
  std::vector<uint8_t> codes(n);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(x.data()), std::streamsize(n * sizeof(float)));
  const int reps = std::atoi(argv[2]);
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto cpu = [] {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  std::vector<double> enc, ex2, ex2_new, enc_cpu, ex2_cpu, ex2_new_cpu;
  uint64_t check = 0;  // keeps the work observable
  for (int r = 0; r < reps; ++r) {
    auto t0 = now();
    const double c0 = cpu();
    fa4sim::encode_array(fa4sim::kE4M3, x, std::span<uint8_t>(codes), fa4sim::Overflow::satfinite);
    auto t1 = now();
    const double c1 = cpu();
    fa4sim::ex2_emu(x, y, 3);
    auto t2 = now();
    const double c2 = cpu();
    {
      auto fresh = std::make_unique_for_overwrite<float[]>(n);
      fa4sim::ex2_emu(x, std::span<float>(fresh.get(), n), 3);
      check += fa4sim::f32_bits(fresh[size_t(r) % n]);
    }
    auto t3 = now();
    const double c3 = cpu();
    ex2_new.push_back(std::chrono::duration<double>(t3 - t2).count());
    ex2_new_cpu.push_back(c3 - c2);
    enc.push_back(std::chrono::duration<double>(t1 - t0).count());
    ex2.push_back(std::chrono::duration<double>(t2 - t1).count());
    enc_cpu.push_back(c1 - c0);
    ex2_cpu.push_back(c2 - c1);
  }
  for (size_t i = 0; i < n; i += 4097) check += codes[i] + fa4sim::f32_bits(y[i]);
  std::printf("{\"n\": %zu, \"check\": %llu, \"encode_e4m3_s\": [", n, (unsigned long long)check);
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", enc[size_t(r)]);
  std::printf("], \"ex2_emu3_s\": [");
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", ex2[size_t(r)]);
  std::printf("], \"ex2_emu3_new_s\": [");
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", ex2_new[size_t(r)]);
  std::printf("], \"encode_e4m3_cpu_s\": [");
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", enc_cpu[size_t(r)]);
  std::printf("], \"ex2_emu3_cpu_s\": [");
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", ex2_cpu[size_t(r)]);
  std::printf("], \"ex2_emu3_new_cpu_s\": [");
  for (int r = 0; r < reps; ++r) std::printf("%s%.9f", r ? ", " : "", ex2_new_cpu[size_t(r)]);
  std::printf("]}\n");
  return 0;
}
