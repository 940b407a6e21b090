// gpu_verify.cpp: the host side of `fa4sim gpu verify` and `fa4sim gpu info` (see gpu_verify.h).
#include "fa4sim/gpu/gpu_verify.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/progress.h"

namespace fa4sim {

namespace {

struct FormatTarget {
  const char* name;
  gpu::Op op;
};
constexpr FormatTarget kFormatTargets[] = {
    {"e4m3-satfinite", gpu::Op::cvt_e4m3_satfinite},
    {"e5m2-satfinite", gpu::Op::cvt_e5m2_satfinite},
    {"bf16", gpu::Op::cvt_bf16},
    {"fp16", gpu::Op::cvt_f16},
    {"bf16-satfinite", gpu::Op::cvt_bf16_satfinite},
    {"fp16-satfinite", gpu::Op::cvt_f16_satfinite},
};

// The CPU model of one op, as a functor the compare loop inlines.
template <typename F>
void with_model(const GpuVerifyTarget& t, F&& body) {
  switch (t.op) {
    case gpu::Op::ex2_emu: {
      const int deg = t.degree;
      if (!t.coeffs.empty()) {
        const float* c = t.coeffs.data();
        body([deg, c](uint32_t x) { return f32_bits(ex2_emu_poly(f32_from_bits(x), c, deg)); });
        return;
      }
      body([deg](uint32_t x) { return f32_bits(ex2_emu(f32_from_bits(x), deg)); });
      return;
    }
    case gpu::Op::cvt_e4m3_satfinite:
      body([](uint32_t x) { return encode(kE4M3, f32_from_bits(x), Overflow::satfinite); });
      return;
    case gpu::Op::cvt_e5m2_satfinite:
      body([](uint32_t x) { return encode(kE5M2, f32_from_bits(x), Overflow::satfinite); });
      return;
    case gpu::Op::cvt_bf16:
      body([](uint32_t x) { return encode(kBF16, f32_from_bits(x), Overflow::ieee); });
      return;
    case gpu::Op::cvt_f16:
      body([](uint32_t x) { return encode(kFP16, f32_from_bits(x), Overflow::ieee); });
      return;
    case gpu::Op::cvt_bf16_satfinite:
      body([](uint32_t x) { return encode(kBF16, f32_from_bits(x), Overflow::satfinite); });
      return;
    case gpu::Op::cvt_f16_satfinite:
      body([](uint32_t x) { return encode(kFP16, f32_from_bits(x), Overflow::satfinite); });
      return;
    case gpu::Op::rcp_mufu: {
      const uint8_t* table = rcp_table();
      body([table](uint32_t x) { return f32_bits(rcp_approx_ftz(f32_from_bits(x), table)); });
      return;
    }
    case gpu::Op::ex2_mufu: {
      const Ex2ApproxTable table = ex2_approx_table();
      body([table](uint32_t x) { return f32_bits(ex2_approx_ftz(f32_from_bits(x), table)); });
      return;
    }
    case gpu::Op::lg2_mufu: {
      const Lg2ApproxTable table = lg2_approx_table();
      body([table](uint32_t x) { return f32_bits(lg2_approx_ftz(f32_from_bits(x), table)); });
      return;
    }
  }
}

std::string hex(uint32_t v, int digits) { return fmt::format("0x{:0{}X}", v, digits); }

int result_hex_digits(gpu::Op op) {
  switch (op) {
    case gpu::Op::cvt_e4m3_satfinite:
    case gpu::Op::cvt_e5m2_satfinite: return 2;
    case gpu::Op::cvt_bf16:
    case gpu::Op::cvt_f16:
    case gpu::Op::cvt_bf16_satfinite:
    case gpu::Op::cvt_f16_satfinite: return 4;
    default: return 8;
  }
}

std::string cpu_model_name(const GpuVerifyTarget& t) {
  switch (t.op) {
    case gpu::Op::ex2_emu:
      return t.coeffs.empty() ? fmt::format("ex2_emu(x, {})", t.degree)
                              : fmt::format("ex2_emu_poly(x, --coeffs, {})", t.degree);
    case gpu::Op::cvt_e4m3_satfinite: return "encode(kE4M3, x, satfinite)";
    case gpu::Op::cvt_e5m2_satfinite: return "encode(kE5M2, x, satfinite)";
    case gpu::Op::cvt_bf16: return "encode(kBF16, x, ieee)";
    case gpu::Op::cvt_f16: return "encode(kFP16, x, ieee)";
    case gpu::Op::cvt_bf16_satfinite: return "encode(kBF16, x, satfinite)";
    case gpu::Op::cvt_f16_satfinite: return "encode(kFP16, x, satfinite)";
    case gpu::Op::rcp_mufu: return "rcp_approx_ftz(x) (data/mufu/rcp_approx_ftz.bin)";
    case gpu::Op::ex2_mufu: return "ex2_approx_ftz(x) (data/mufu/ex2_approx_ftz.bin)";
    case gpu::Op::lg2_mufu: return "lg2_approx_ftz(x) (data/mufu/lg2_approx_ftz.bin)";
  }
  return "none";
}

}  // namespace

InputClass input_class(uint32_t bits) {
  const uint32_t e = bits & 0x7F800000u, m = bits & 0x007FFFFFu;
  if (e == 0x7F800000u) return m ? InputClass::nan : InputClass::inf;
  return e == 0 ? InputClass::zero_subnormal : InputClass::normal;
}

const char* input_class_name(InputClass c) {
  switch (c) {
    case InputClass::nan: return "NaN";
    case InputClass::inf: return "inf";
    case InputClass::zero_subnormal: return "zero/subnormal";
    case InputClass::normal: return "normal";
  }
  return "?";
}

std::vector<GpuVerifyTarget> gpu_verify_targets(const GpuVerifyOptions& o) {
  if (o.what != "exp2" && o.what != "formats" && o.what != "mufu" && o.what != "all")
    throw Error(fmt::format("--what '{}' is not a verify set", o.what),
                "valid: exp2, formats, mufu, all");
  const bool exp2 = o.what == "exp2" || o.what == "all";
  std::vector<GpuVerifyTarget> out;
  if (exp2 && !o.coeffs.empty()) {
    if (o.coeffs.size() < 2 || o.coeffs.size() > kExp2MaxDegree + 1)
      throw Error(fmt::format("--coeffs: {} coefficients given", o.coeffs.size()), "give 2 to 6");
    const int d = static_cast<int>(o.coeffs.size()) - 1;
    out.push_back({fmt::format("exp2-deg{}-coeffs", d), gpu::Op::ex2_emu, d, o.coeffs});
  } else if (exp2) {
    if (o.degrees.empty()) throw Error("--degree needs at least one degree", "valid: 0..5");
    for (int d : o.degrees) {
      if (d < 0 || d > kExp2MaxDegree)
        throw Error(fmt::format("--degree {} does not exist", d), "valid: 0..5");
      out.push_back({fmt::format("exp2-deg{}", d), gpu::Op::ex2_emu, d});
    }
  }
  if (o.what == "formats" || o.what == "all")
    for (const auto& f : kFormatTargets) out.push_back({f.name, f.op, 0});
  if (o.what == "mufu" || o.what == "all") {
    // A missing or damaged table is bad input (exit 2), found before the device.
    rcp_table();
    ex2_approx_table();
    lg2_approx_table();
    out.push_back({"ex2-mufu", gpu::Op::ex2_mufu, 0});
    out.push_back({"rcp-mufu", gpu::Op::rcp_mufu, 0});
    out.push_back({"lg2-mufu", gpu::Op::lg2_mufu, 0});
  }
  return out;
}

uint32_t gpu_verify_model(const GpuVerifyTarget& t, uint32_t input_bits) {
  uint32_t r = 0;
  with_model(t, [&](auto model) { r = model(input_bits); });
  return r;
}

void gpu_verify_compare_chunk(const GpuVerifyTarget& t, uint64_t begin, const uint32_t* gpu_bits,
                              uint64_t n, int threads, GpuVerifyResult& r) {
  // Sub-chunks of 2^20: per-sub-chunk counts and first mismatches, merged in order below, so the
  // result does not depend on the thread count.
  constexpr uint64_t kSub = uint64_t(1) << 20;
  struct Part {
    uint64_t mism[kInputClasses] = {0, 0, 0, 0};
    uint64_t per_class[kInputClasses] = {0, 0, 0, 0};
    std::vector<GpuMismatch> first;
  };
  std::vector<Part> parts(chunk_count(n, kSub));
  with_model(t, [&](auto model) {
    parallel_chunks(n, kSub, threads, [&](uint64_t c, uint64_t b, uint64_t e) {
      Part& p = parts[c];
      for (uint64_t i = b; i < e; ++i) {
        const uint32_t x = static_cast<uint32_t>(begin + i);
        const int cls = static_cast<int>(input_class(x));
        ++p.per_class[cls];
        const uint32_t want = model(x);
        if (want != gpu_bits[i]) {
          ++p.mism[cls];
          if (p.first.size() < kGpuVerifyFirst) p.first.push_back({x, want, gpu_bits[i]});
        }
      }
    });
  });
  for (const auto& p : parts) {
    for (int k = 0; k < kInputClasses; ++k) {
      r.mismatches[k] += p.mism[k];
      r.inputs_per_class[k] += p.per_class[k];
    }
    for (const auto& m : p.first)
      if (r.first.size() < kGpuVerifyFirst) r.first.push_back(m);
  }
  r.inputs += n;
}

std::vector<GpuVerifyResult> run_gpu_verify(const GpuVerifyOptions& o) {
  const auto targets = gpu_verify_targets(o);  // validate before touching the device
  gpu::require();
  std::vector<GpuVerifyResult> out;
  for (const auto& t : targets) {
    GpuVerifyResult r;
    r.target = t;
    gpu::set_ex2_coeffs(t.coeffs);  // empty: upstream's POLY_EX2
    Progress bar(fmt::format("gpu verify {:<15}", t.name), uint64_t(1) << 32);
    const auto timing = gpu::run_all_inputs(
        t.op, t.degree, o.chunk, [&](uint64_t begin, const uint32_t* bits, uint64_t n) {
          gpu_verify_compare_chunk(t, begin, bits, n, o.threads, r);
          if (o.progress) bar.update(r.inputs);
        });
    r.wall_s = timing.wall_s;
    r.host_wait_s = timing.host_wait_s;
    r.consume_s = timing.consume_s;
    out.push_back(std::move(r));
  }
  return out;
}

json gpu_device_json(const gpu::DeviceInfo& d) {
  return {{"name", d.name},
          {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
          {"sm_count", d.sm_count},
          {"sm_clock_max_mhz", d.sm_clock_max_mhz},
          {"sm_clock_now_mhz", d.sm_clock_now_mhz},
          {"mem_clock_max_mhz", d.mem_clock_max_mhz},
          {"mem_clock_now_mhz", d.mem_clock_now_mhz},
          {"mem_bus_bits", d.mem_bus_bits},
          {"global_mem_bytes", d.global_mem_bytes},
          {"l2_bytes", d.l2_bytes},
          {"pci_bus_id", d.pci_bus_id},
          {"driver_version", d.driver_version},
          {"cuda_driver_api", d.cuda_driver_api},
          {"cuda_runtime", d.cuda_runtime}};
}

Report gpu_info_report(const gpu::DeviceInfo& d) {
  Report r;
  r.command = "gpu info";
  r.results = {{"device", gpu_device_json(d)}};
  auto ver = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  Table t{"CUDA device 0", {"property", "value"}, {}, {}};
  t.rows = {
      {"name", d.name},
      {"compute capability",
       fmt::format("{}.{} (backend built for sm_90a)", d.cc_major, d.cc_minor)},
      {"SMs", std::to_string(d.sm_count)},
      {"SM clock", fmt::format("{} MHz max, {} now", d.sm_clock_max_mhz,
                               d.sm_clock_now_mhz < 0 ? std::string("unknown (no NVML)")
                                                      : fmt::format("{} MHz", d.sm_clock_now_mhz))},
      {"memory clock",
       fmt::format("{} MHz max, {} now", d.mem_clock_max_mhz,
                   d.mem_clock_now_mhz < 0 ? std::string("unknown")
                                           : fmt::format("{} MHz", d.mem_clock_now_mhz))},
      {"memory", fmt::format("{:.1f} GiB, {}-bit bus", double(d.global_mem_bytes) / (1u << 30),
                             d.mem_bus_bits)},
      {"L2", fmt::format("{:.0f} MiB", double(d.l2_bytes) / (1u << 20))},
      {"PCI bus", d.pci_bus_id},
      {"driver", d.driver_version.empty() ? std::string("unknown (no NVML)") : d.driver_version},
      {"CUDA driver API / runtime", ver(d.cuda_driver_api) + " / " + ver(d.cuda_runtime)}};
  r.tables.push_back(std::move(t));
  return r;
}

Report gpu_verify_report(const GpuVerifyOptions& o, const std::vector<GpuVerifyResult>& results,
                         const gpu::DeviceInfo& dev) {
  Report r;
  r.command = "gpu verify";
  r.threads = o.threads;
  r.params = {{"what", o.what}, {"degree", o.degrees}, {"chunk", o.chunk}};
  if (!o.coeffs.empty()) {
    json cs = json::array();
    for (float c : o.coeffs) cs.push_back(fmt::format("{:a}", c));
    r.params["coeffs"] = cs;
  }
  json fns = json::array();
  uint64_t total = 0;
  Table t{
      "GPU instructions vs CPU emulators, every float32 input (2^32 each), 0 bits tolerance",
      {"function", "PTX", "CPU model", "NaN", "inf", "zero/sub", "normal", "mismatches", "time s"},
      {},
      {}};
  Table firsts{"First mismatches (input bits, CPU bits, GPU bits)",
               {"function", "input", "CPU", "GPU"},
               {},
               {}};
  double max_s = 0;
  for (const auto& v : results) {
    const int digits = result_hex_digits(v.target.op);
    json first = json::array();
    for (const auto& m : v.first) {
      first.push_back(
          {{"input", hex(m.input, 8)}, {"cpu", hex(m.cpu, digits)}, {"gpu", hex(m.gpu, digits)}});
      firsts.rows.push_back(
          {v.target.name, hex(m.input, 8), hex(m.cpu, digits), hex(m.gpu, digits)});
    }
    json per_class = json::object();
    for (int k = 0; k < kInputClasses; ++k)
      per_class[input_class_name(static_cast<InputClass>(k))] = {{"inputs", v.inputs_per_class[k]},
                                                                 {"mismatches", v.mismatches[k]}};
    fns.push_back(
        {{"function", v.target.name},
         {"ptx", gpu::ptx_of(v.target.op)},
         {"cpu_model", cpu_model_name(v.target)},
         {"degree", v.target.op == gpu::Op::ex2_emu ? json(v.target.degree) : json(nullptr)},
         {"inputs", v.inputs},
         {"mismatches", v.total_mismatches()},
         {"per_class", per_class},
         {"first_mismatches", first},
         {"wall_s", v.wall_s},
         {"host_wait_s", v.host_wait_s},
         {"host_compare_s", v.consume_s}});
    t.rows.push_back({v.target.name, gpu::ptx_of(v.target.op), cpu_model_name(v.target),
                      std::to_string(v.mismatches[0]), std::to_string(v.mismatches[1]),
                      std::to_string(v.mismatches[2]), std::to_string(v.mismatches[3]),
                      std::to_string(v.total_mismatches()), fmt::format("{:.2f}", v.wall_s)});
    total += v.total_mismatches();
    max_s = std::max(max_s, v.wall_s);
  }
  t.notes.push_back(fmt::format(
      "Each time is one function end to end: device kernels, device-to-host copies of 16 GiB of "
      "results, and the host comparison on {} threads (slowest: {:.2f} s).",
      o.threads > 0 ? o.threads : default_threads(), max_s));
  t.notes.push_back(
      "Not checkable on hardware: FP8 non-saturating (OCP) conversions; PTX only has "
      "cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32.");
  for (const auto& v : results)
    if (v.target.op == gpu::Op::rcp_mufu)
      t.notes.push_back(fmt::format(
          "rcp-mufu: the CPU model is the H200's measured table (data/mufu/rcp_approx_ftz.json); its "
          "NaN output 0x{:08X} was read off the H200 (data/gpu/mufu/2026-12-01-verify); the NaN column checks it.",
          kRcpNaN));
    else if (v.target.op == gpu::Op::ex2_mufu || v.target.op == gpu::Op::lg2_mufu)
      t.notes.push_back(fmt::format(
          "{}: the CPU model is the H200's measured tables (data/mufu/{}_approx_ftz.json) and the "
          "rule that scales them (docs/mufu.md); its NaN output 0x{:08X}{} is the model's choice, "
          "checked here by the NaN column.",
          v.target.name, v.target.op == gpu::Op::ex2_mufu ? "ex2" : "lg2", kGpuCanonicalNaN,
          v.target.op == gpu::Op::lg2_mufu ? " (also for x < 0)" : ""));
  t.notes.push_back(
      total == 0
          ? std::string("RESULT: 0 mismatches: the CPU emulators are bit-exact.")
          : fmt::format("RESULT: {} mismatches: the CPU emulators are NOT bit-exact.", total));
  r.results = {{"device", gpu_device_json(dev)},
               {"functions", fns},
               {"total_mismatches", total},
               {"bit_exact", total == 0}};
  r.tables.push_back(std::move(t));
  if (!firsts.rows.empty()) r.tables.push_back(std::move(firsts));
  return r;
}

}  // namespace fa4sim
