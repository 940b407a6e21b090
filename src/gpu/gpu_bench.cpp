// gpu_bench.cpp: the host side of `fa4sim gpu bench-exp` (see gpu_bench.h).
#include "fa4sim/gpu/gpu_bench.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/exp2_schedule.h"
#include "fa4sim/gpu/gpu_verify.h"
#include "fa4sim/analysis/roofline.h"

namespace fa4sim {

namespace {
constexpr int kRowWidth = 128;
}

std::string gpu_device_slug(const std::string& name) {
  std::string s;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u))
      s += static_cast<char>(std::tolower(u));
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "unknown-gpu" : s;
}

std::string gpu_arch_for_device(const std::string& name) {
  if (name.find("H200") != std::string::npos) return "h200";
  if (name.find("H100") != std::string::npos) return "h100_sxm";
  return "";
}

void validate(const GpuBenchOptions& o) {
  if (o.degrees.empty()) throw Error("--degree needs at least one degree", "valid: 0..5");
  for (int d : o.degrees)
    if (d < 0 || d > kExp2MaxDegree)
      throw Error(fmt::format("--degree {} does not exist", d), "valid: 0..5");
  if (!o.coeffs.empty() &&
      (o.degrees.size() != 1 || o.degrees[0] != static_cast<int>(o.coeffs.size()) - 1))
    throw Error("--coeffs sets the degree (the number of coefficients - 1)", "leave --degree out");
  if (o.reps < 1 || o.reps > 101)
    throw Error(fmt::format("--reps {} is out of range", o.reps), "valid: 1..101");
}

GpuBenchResult run_gpu_bench(const GpuBenchOptions& o) {
  validate(o);
  gpu::require();
  GpuBenchResult r;
  r.device = gpu::device_info();
  r.arch = gpu_arch_for_device(r.device.name);
  std::optional<PipeModelSpec> pm;
  std::optional<ArchSpec> arch;
  try {
    if (r.arch.empty()) throw Error(fmt::format("no data/archs entry for '{}'", r.device.name));
    pm = load_pipe_model();
    arch = load_known_arch(r.arch);
  } catch (const Error& e) {
    r.model_error = e.what();
    pm.reset();
  }
  gpu::set_ex2_coeffs(o.coeffs);
  for (int d : o.degrees) {
    for (int k = 0; k <= 16; ++k) {
      GpuBenchMixPoint p;
      p.degree = d;
      p.emulated_of_16 = k;
      p.f = k / 16.0;
      p.measured = gpu::bench_exp_mix(d, k, o.reps);
      if (pm) {
        const PipePoint pp = pipe_point(*pm, *arch, d, p.f, false);
        p.predicted = pp.exps_per_clk_sm;
        p.predicted_bound = pp.bound;
      }
      r.mix.push_back(p);
    }
    for (const auto& rule : gpu::bench_rule_configs()) {
      GpuBenchRulePoint p;
      p.degree = d;
      p.rule = rule;
      p.f = emulated_count(kRowWidth, rule.freq, rule.res, rule.start_frg) / double(kRowWidth);
      p.measured = gpu::bench_exp_rule(d, rule, o.reps);
      if (pm) p.predicted = pipe_point(*pm, *arch, d, p.f, false).exps_per_clk_sm;
      r.rules.push_back(p);
    }
  }
  return r;
}

namespace {

json point_json(const gpu::ExpBenchPoint& p) {
  return {{"exps_per_clk_sm", p.exps_per_clk_per_sm},
          {"min_exps_per_clk_sm", p.min_exps_per_clk_per_sm},
          {"max_exps_per_clk_sm", p.max_exps_per_clk_per_sm},
          {"exps_per_launch", p.exps},
          {"cycles_per_sm", p.cycles_per_sm},
          {"wall_ms", p.wall_ms},
          {"sm_clock_effective_mhz", p.sm_clock_effective_mhz},
          {"sm_clock_nvml_mhz", p.sm_clock_nvml_mhz},
          {"reps", p.reps}};
}

std::string ratio_str(double measured, double predicted) {
  return predicted > 0 ? fmt::format("{:.2f}", measured / predicted) : std::string("-");
}

}  // namespace

Report gpu_bench_report(const GpuBenchOptions& o, const GpuBenchResult& r) {
  Report rep;
  rep.command = "gpu bench-exp";
  rep.params = {{"degree", o.degrees}, {"reps", o.reps}};
  if (!o.coeffs.empty()) {
    json cs = json::array();
    for (float c : o.coeffs) cs.push_back(fmt::format("{:a}", c));
    rep.params["coeffs"] = cs;
  }
  json mix = json::array(), rules = json::array();
  for (const auto& p : r.mix) {
    json j = point_json(p.measured);
    j["degree"] = p.degree;
    j["f"] = p.f;
    j["emulated_chains_of_16"] = p.emulated_of_16;
    j["predicted_exps_per_clk_sm"] = p.predicted > 0 ? json(p.predicted) : json(nullptr);
    j["predicted_bound"] = p.predicted_bound;
    mix.push_back(j);
  }
  for (const auto& p : r.rules) {
    json j = point_json(p.measured);
    j["degree"] = p.degree;
    j["freq"] = p.rule.freq;
    j["res"] = p.rule.res;
    j["start_frg"] = p.rule.start_frg;
    j["f"] = p.f;
    j["predicted_exps_per_clk_sm"] = p.predicted > 0 ? json(p.predicted) : json(nullptr);
    rules.push_back(j);
  }
  rep.results = {{"device", gpu_device_json(r.device)},
                 {"arch", r.arch},
                 {"model_error", r.model_error},
                 {"method",
                  "16 independent chains y <- exp2(-y) per thread, 1024 threads per SM, "
                  "clock64 spans per SM, median of reps after a warm-up; exp only"},
                 {"mix", mix},
                 {"rules", rules}};
  for (int d : o.degrees) {
    Table t{fmt::format("exp2 throughput on {} (degree {}), exps per clock per SM, exp only",
                        r.device.name, d),
            {"f emulated", "measured", "min..max", "model", "model bound", "measured/model"},
            {},
            {}};
    for (const auto& p : r.mix) {
      if (p.degree != d) continue;
      t.rows.push_back({fmt::format("{}/16", p.emulated_of_16),
                        fmt::format("{:.2f}", p.measured.exps_per_clk_per_sm),
                        fmt::format("{:.2f}..{:.2f}", p.measured.min_exps_per_clk_per_sm,
                                    p.measured.max_exps_per_clk_per_sm),
                        p.predicted > 0 ? fmt::format("{:.2f}", p.predicted) : "-",
                        p.predicted_bound, ratio_str(p.measured.exps_per_clk_per_sm, p.predicted)});
    }
    Table u{fmt::format(
                "Upstream interleaving rule (apply_exp2_convert, 128-column row), degree {}", d),
            {"freq,res,start_frg", "f emulated", "measured", "model", "measured/model"},
            {},
            {}};
    for (const auto& p : r.rules) {
      if (p.degree != d) continue;
      u.rows.push_back({fmt::format("{},{},{}", p.rule.freq, p.rule.res, p.rule.start_frg),
                        fmt::format("{:.4f}", p.f),
                        fmt::format("{:.2f}", p.measured.exps_per_clk_per_sm),
                        p.predicted > 0 ? fmt::format("{:.2f}", p.predicted) : "-",
                        ratio_str(p.measured.exps_per_clk_per_sm, p.predicted)});
    }
    const auto& any = r.mix.empty() ? gpu::ExpBenchPoint{} : r.mix.front().measured;
    t.notes.push_back(fmt::format(
        "SM clock during the runs: {:.0f} MHz effective (clock64 cycles / event time), NVML {} MHz; "
        "{} SMs. Model: roofline pipe model ({}), exp only.",
        any.sm_clock_effective_mhz, any.sm_clock_nvml_mhz, r.device.sm_count,
        r.model_error.empty() ? "data/exp_pipe_model.json, data/archs/" + r.arch + ".json"
                              : r.model_error));
    rep.tables.push_back(std::move(t));
    rep.tables.push_back(std::move(u));
  }
  return rep;
}

json gpu_bench_measured_json(const GpuBenchResult& r, const std::string& command) {
  json points = json::array(), rule_points = json::array();
  for (const auto& p : r.mix)
    points.push_back({{"degree", p.degree},
                      {"f", p.f},
                      {"exps_per_clk_sm", p.measured.exps_per_clk_per_sm},
                      {"min_exps_per_clk_sm", p.measured.min_exps_per_clk_per_sm},
                      {"max_exps_per_clk_sm", p.measured.max_exps_per_clk_per_sm}});
  for (const auto& p : r.rules)
    rule_points.push_back({{"degree", p.degree},
                           {"freq", p.rule.freq},
                           {"res", p.rule.res},
                           {"start_frg", p.rule.start_frg},
                           {"f", p.f},
                           {"exps_per_clk_sm", p.measured.exps_per_clk_per_sm}});
  const auto& any = r.mix.empty() ? gpu::ExpBenchPoint{} : r.mix.front().measured;
  return {{"schema", "fa4sim/bench-exp-v1"},
          {"device", r.device.name},
          {"arch", r.arch},
          {"provenance",
           {{"command", command},
            {"date", utc_now_iso8601()},
            {"host", host_name()},
            {"gpu", gpu_device_json(r.device)},
            {"sm_clock_effective_mhz", any.sm_clock_effective_mhz},
            {"sm_clock_nvml_mhz", any.sm_clock_nvml_mhz},
            {"method",
             "fa4sim gpu bench-exp: 16 independent chains y <- exp2(-y) per thread, "
             "1024 threads per SM, clock64 spans per SM, median of reps; exp only"}}},
          {"points", points},
          {"rule_points", rule_points}};
}

}  // namespace fa4sim
