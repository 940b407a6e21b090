// The `gpu` section of `fa4sim report`: the committed H200 measurements (data/gpu/), when
// present; the report never needs a GPU.
#include <optional>

#include <fmt/format.h>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/report/sections.h"
#include "fa4sim/util/json_input.h"

namespace fa4sim {

namespace {

std::string verify_table(ReportContext& ctx, const json& verify) {
  const json& r = verify.at("results");
  std::string md = fmt::format(
      "`fa4sim gpu verify --what all` on {} (driver {}), {}: every float32 input, 0 bits "
      "tolerance.\n\n| function | PTX | mismatches | time s |\n|---|---|---|---|\n",
      r.at("device").at("name").get<std::string>(),
      r.at("device").at("driver_version").get<std::string>(),
      verify.at("provenance").at("date").get<std::string>());
  uint64_t total = 0;
  for (const auto& f : r.at("functions")) {
    md += fmt::format("| {} | `{}` | {} | {:.2f} |\n", f.at("function").get<std::string>(),
                      f.at("ptx").get<std::string>(), f.at("mismatches").get<uint64_t>(),
                      f.at("wall_s").get<double>());
    total += f.at("mismatches").get<uint64_t>();
  }
  ctx.add_finding(
      {fmt::format("{}'s own instructions vs the CPU emulators, all 2^32 inputs, {} functions: "
                   "mismatches",
                   r.at("device").at("name").get<std::string>(), r.at("functions").size()),
       std::to_string(total), "-", total == 0,
       "gpu: pass = 0 mismatching bits, the tolerance of `fa4sim gpu verify` (data/gpu/)"});
  return md + "\n";
}

std::string bench_tables(const json& bench) {
  std::string md =
      "exp2 throughput, exps/clk/SM, exp only, degree 3 (`fa4sim gpu bench-exp`), against the "
      "roofline pipe model:\n\n| f | measured | model | measured/model | model bound |\n|---|---|---|---|---|\n";
  for (const auto& p : bench.at("results").at("mix")) {
    if (p.at("degree").get<int>() != 3) continue;
    const double m = p.at("exps_per_clk_sm").get<double>();
    const json& pr = p.at("predicted_exps_per_clk_sm");
    md +=
        fmt::format("| {}/16 | {:.2f} | {} | {} | {} |\n", p.at("emulated_chains_of_16").get<int>(),
                    m, pr.is_null() ? "-" : fmt::format("{:.2f}", pr.get<double>()),
                    pr.is_null() ? "-" : fmt::format("{:.2f}", m / pr.get<double>()),
                    p.at("predicted_bound").get<std::string>());
  }
  md +=
      "\nUpstream interleaving rule (apply_exp2_convert), degree 3:\n\n| freq,res,start_frg | f | measured | model |\n|---|---|---|---|\n";
  for (const auto& p : bench.at("results").at("rules")) {
    if (p.at("degree").get<int>() != 3) continue;
    const json& pr = p.at("predicted_exps_per_clk_sm");
    md += fmt::format("| {},{},{} | {:.4f} | {:.2f} | {} |\n", p.at("freq").get<int>(),
                      p.at("res").get<int>(), p.at("start_frg").get<int>(), p.at("f").get<double>(),
                      p.at("exps_per_clk_sm").get<double>(),
                      pr.is_null() ? "-" : fmt::format("{:.2f}", pr.get<double>()));
  }
  return md + "\n";
}

std::string hardware_table(const json& hw) {
  const json& h = hw.at("results").at("hardware");
  const json& m = h.at("mufu_vs_exact");
  std::string md = fmt::format(
      "`fa4sim exp2 --hardware`: MUFU ex2.approx.ftz.f32 vs exact 2^x: fp32 max rel {:.3g}, "
      "bf16 identical {:.3f} %. Emulation vs MUFU (paper: degree 3 within 1 bf16 ULP on 99 %):\n\n"
      "| degree | bf16 identical | within 1 bf16 ULP | max fp32 ULP |\n|---|---|---|---|\n",
      m.at("max_rel").get<double>(), m.at("identical_pct").get<double>());
  for (const auto& v : h.at("emulation_vs_mufu"))
    md += fmt::format("| {} | {:.3f} % | {:.3f} % | {:.0f} |\n", v.at("degree").get<int>(),
                      v.at("identical_pct").get<double>(), v.at("within_1ulp_pct").get<double>(),
                      v.at("max_ulp_f32").get<double>());
  return md + "\n";
}

}  // namespace

void report_gpu(ReportContext& ctx) {
  const std::string dir = roofline_data_dir() + "/gpu/";
  std::string& md = ctx.markdown;
  md += "## gpu (measured on an NVIDIA H200, data/gpu/)\n\n";
  const auto verify = try_read_json_input(dir + "nvidia-h200-verify.json");
  const auto bench = try_read_json_input(dir + "nvidia-h200-bench-exp-report.json");
  const auto hw = try_read_json_input(dir + "nvidia-h200-exp2-hardware.json");
  if (!verify && !bench && !hw) {
    md += "No GPU data in " + dir +
          " (run `fa4sim gpu verify`, `gpu bench-exp`, `exp2 --hardware` on a GPU).\n\n";
    return;
  }
  if (verify) md += verify_table(ctx, *verify);
  if (bench) md += bench_tables(*bench);
  if (hw) md += hardware_table(*hw);
  md += "Provenance (commands, GPU, driver, clocks, date): data/gpu/README.md.\n\n";
}

}  // namespace fa4sim
