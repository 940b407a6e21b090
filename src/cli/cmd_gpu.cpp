// `fa4sim gpu info | verify | bench-exp`: the CUDA backend's commands. Parses and validates,
// then calls the library (src/gpu/gpu_verify.cpp, src/gpu/gpu_bench.cpp). Without a usable device every
// subcommand fails with "fa4sim: error: no CUDA device ..." and exit code 3, after its options
// were validated (bad options are still exit code 2).
// Also the `fa4sim report` section `gpu`, which shows the committed H200 data (data/gpu/) when
// it exists: the report never needs a GPU.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_bench.h"
#include "fa4sim/gpu/gpu_verify.h"
#include "fa4sim/analysis/fit.h"
#include "fa4sim/analysis/roofline.h"

namespace fa4sim::cli {

namespace {

struct GpuCliOptions {
  CommonOptions info_common;
  std::string what = "all";
  std::string verify_degree = "0,1,2,3,4,5";
  CommonOptions verify_common;
  std::string bench_degree = "3";
  std::string verify_coeffs, bench_coeffs;
  bool verify_degree_given = false, bench_degree_given = false;
  std::string reps = "5";
  std::string out;
  CommonOptions bench_common;
};

std::vector<int> to_ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

void run_info(const GpuCliOptions& o) {
  check_report_path(o.info_common.json_path);
  Stopwatch sw;
  const auto d = gpu::device_info();
  emit(gpu_info_report(d), o.info_common.json_path, sw.seconds());
}

void run_verify(const GpuCliOptions& o) {
  GpuVerifyOptions v;
  v.what = parse_choice("--what", o.what, {"exp2", "formats", "all"});
  v.degrees = to_ints(parse_int_list("--degree", o.verify_degree, 0, 5));
  if (!o.verify_coeffs.empty()) {
    if (o.verify_degree_given)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)", "leave --degree out");
    if (v.what == "formats") throw Error("--coeffs needs --what exp2 or all", "the coefficients are exp2's");
    v.coeffs = load_coeffs("--coeffs", o.verify_coeffs);
  }
  v.threads = o.verify_common.threads;
  gpu_verify_targets(v);  // validates
  check_report_path(o.verify_common.json_path);
  Stopwatch sw;
  const auto results = run_gpu_verify(v);
  const auto rep = gpu_verify_report(v, results, gpu::device_info());
  emit(rep, o.verify_common.json_path, sw.seconds());
  const uint64_t total = rep.results.at("total_mismatches").get<uint64_t>();
  if (total != 0)
    throw Error(fmt::format("gpu verify: {} mismatches between the GPU and the CPU emulators", total),
                "the CPU emulator is wrong where they differ: see the first mismatches above",
                kExitCheckFailed);
}

void run_bench(const GpuCliOptions& o, const std::string& command) {
  GpuBenchOptions b;
  b.degrees = to_ints(parse_int_list("--degree", o.bench_degree, 0, 5));
  b.reps = static_cast<int>(parse_int("--reps", o.reps, 1, 101));
  if (!o.bench_coeffs.empty()) {
    if (o.bench_degree_given)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)", "leave --degree out");
    b.coeffs = load_coeffs("--coeffs", o.bench_coeffs);
    b.degrees = {static_cast<int>(b.coeffs.size()) - 1};
  }
  validate(b);
  check_report_path(o.bench_common.json_path);
  if (!o.out.empty() && o.out != "none") check_report_path(o.out);
  Stopwatch sw;
  const auto r = run_gpu_bench(b);
  std::string out = o.out;
  if (out.empty()) {
    out = "data/gpu/" + gpu_device_slug(r.device.name) + "-bench-exp.json";
    std::error_code ec;
    std::filesystem::create_directories("data/gpu", ec);
  }
  emit(gpu_bench_report(b, r), o.bench_common.json_path, sw.seconds());
  if (out != "none") {
    write_file_atomic(out, gpu_bench_measured_json(r, command).dump(2) + "\n");
    std::fprintf(stderr, "fa4sim gpu bench-exp: wrote %s (read it with 'fa4sim roofline --measured %s')\n",
                 out.c_str(), out.c_str());
  }
}

std::string command_line(const GpuCliOptions& o) {
  std::string c = o.bench_coeffs.empty() ? "fa4sim gpu bench-exp --degree " + o.bench_degree
                                         : "fa4sim gpu bench-exp --coeffs " + o.bench_coeffs;
  c += " --reps " + o.reps;
  if (!o.out.empty()) c += " --out " + o.out;
  return c;
}

}  // namespace

void add_gpu(CLI::App& root) {
  static GpuCliOptions o;
  auto* gpu = root.add_subcommand(
      "gpu", "The CUDA backend (sm_90a): device info, bit-exact verification, exp2 throughput");
  gpu->require_subcommand(1);

  auto* info = gpu->add_subcommand("info", "Print the CUDA device, SM count, clocks and driver "
                                           "(exit code 3 when there is no CUDA device)");
  add_common_options(info, o.info_common);
  info->callback([] { run_info(o); });

  auto* verify = gpu->add_subcommand(
      "verify",
      "Run the GPU's own exp2 and conversion instructions on all 2^32 float32 inputs and compare "
      "every result bit with the CPU emulators (exit code 1 on any mismatch)");
  verify->add_option("--what", o.what, "Which functions: exp2 (the emulation, per degree), formats "
                                       "(e4m3/e5m2 satfinite, bf16, fp16, and their satfinite forms), all")
      ->type_name("SET")
      ->capture_default_str();
  auto* vdeg = ints_in(verify->add_option("--degree", o.verify_degree, "exp2 emulation degrees"), 0, 5);
  vdeg->type_name("N[,N...]")->capture_default_str();
  verify->add_option("--coeffs", o.verify_coeffs,
                     "Verify the emulation with these float32 coefficients (c0,c1,... or a file, as "
                     "`fa4sim exp2 --coeffs`) instead of POLY_EX2; sets the degree")
      ->type_name("FILE|c0,c1,...");
  add_common_options(verify, o.verify_common);
  verify->callback([vdeg] {
    o.verify_degree_given = vdeg->count() > 0;
    run_verify(o);
  });

  auto* bench = gpu->add_subcommand(
      "bench-exp",
      "Measure exp2 throughput (exps per clock per SM): MUFU, emulation, mixtures f = 0..1 in 1/16 "
      "steps and the upstream interleaving rule; writes the roofline's measured-data file");
  auto* bdeg = ints_in(bench->add_option("--degree", o.bench_degree, "Emulation degrees"), 0, 5);
  bdeg->type_name("N[,N...]")->capture_default_str();
  bench->add_option("--coeffs", o.bench_coeffs,
                    "Time the emulation with these float32 coefficients at f = 0..1 (the mix points; "
                    "the interleaving-rule points keep POLY_EX2); sets the degree")
      ->type_name("FILE|c0,c1,...");
  int_in(bench->add_option("--reps", o.reps, "Timed launches per point (median)"), 1, 101)
      ->type_name("N")
      ->capture_default_str();
  bench->add_option("--out", o.out,
                    "Measured-data file for 'fa4sim roofline --measured' (default "
                    "data/gpu/<device>-bench-exp.json; 'none' to skip)")
      ->type_name("FILE")
      ->check(non_empty_path());
  add_common_options(bench, o.bench_common);
  bench->callback([bdeg] {
    o.bench_degree_given = bdeg->count() > 0;
    run_bench(o, command_line(o));
  });
  add_gpu_attention(root);  // `gpu attention` (cmd_gpu_attention.cpp) hangs under this command
  add_gpu_upstream(*gpu);   // `gpu upstream` (cmd_gpu_upstream.cpp)
}

}  // namespace fa4sim::cli

namespace fa4sim::cli {

namespace {
std::optional<json> read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  try {
    return json::parse(f);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

// The committed H200 measurements (data/gpu/), when present: the report never needs a GPU.
void report_gpu(ReportContext& ctx) {
  const std::string dir = roofline_data_dir() + "/gpu/";
  std::string& md = ctx.markdown;
  md += "## gpu (measured on an NVIDIA H200, data/gpu/)\n\n";
  const auto verify = read_json(dir + "nvidia-h200-verify.json");
  const auto bench = read_json(dir + "nvidia-h200-bench-exp-report.json");
  const auto hw = read_json(dir + "nvidia-h200-exp2-hardware.json");
  if (!verify && !bench && !hw) {
    md += "No GPU data in " + dir + " (run `fa4sim gpu verify`, `gpu bench-exp`, `exp2 --hardware` on a GPU).\n\n";
    return;
  }
  if (verify) {
    const json& r = verify->at("results");
    md += fmt::format("`fa4sim gpu verify --what all` on {} (driver {}), {}: every float32 input, 0 bits "
                      "tolerance.\n\n| function | PTX | mismatches | time s |\n|---|---|---|---|\n",
                      r.at("device").at("name").get<std::string>(),
                      r.at("device").at("driver_version").get<std::string>(),
                      verify->at("provenance").at("date").get<std::string>());
    for (const auto& f : r.at("functions"))
      md += fmt::format("| {} | `{}` | {} | {:.2f} |\n", f.at("function").get<std::string>(),
                        f.at("ptx").get<std::string>(), f.at("mismatches").get<uint64_t>(),
                        f.at("wall_s").get<double>());
    md += "\n";
  }
  if (bench) {
    md += "exp2 throughput, exps/clk/SM, exp only, degree 3 (`fa4sim gpu bench-exp`), against the "
          "roofline pipe model:\n\n| f | measured | model | measured/model | model bound |\n|---|---|---|---|---|\n";
    for (const auto& p : bench->at("results").at("mix")) {
      if (p.at("degree").get<int>() != 3) continue;
      const double m = p.at("exps_per_clk_sm").get<double>();
      const json& pr = p.at("predicted_exps_per_clk_sm");
      md += fmt::format("| {}/16 | {:.2f} | {} | {} | {} |\n", p.at("emulated_chains_of_16").get<int>(), m,
                        pr.is_null() ? "-" : fmt::format("{:.2f}", pr.get<double>()),
                        pr.is_null() ? "-" : fmt::format("{:.2f}", m / pr.get<double>()),
                        p.at("predicted_bound").get<std::string>());
    }
    md += "\nUpstream interleaving rule (apply_exp2_convert), degree 3:\n\n| freq,res,start_frg | f | measured | model |\n|---|---|---|---|\n";
    for (const auto& p : bench->at("results").at("rules")) {
      if (p.at("degree").get<int>() != 3) continue;
      const json& pr = p.at("predicted_exps_per_clk_sm");
      md += fmt::format("| {},{},{} | {:.4f} | {:.2f} | {} |\n", p.at("freq").get<int>(), p.at("res").get<int>(),
                        p.at("start_frg").get<int>(), p.at("f").get<double>(), p.at("exps_per_clk_sm").get<double>(),
                        pr.is_null() ? "-" : fmt::format("{:.2f}", pr.get<double>()));
    }
    md += "\n";
  }
  if (hw) {
    const json& h = hw->at("results").at("hardware");
    const json& m = h.at("mufu_vs_exact");
    md += fmt::format("`fa4sim exp2 --hardware`: MUFU ex2.approx.ftz.f32 vs exact 2^x: fp32 max rel {:.3g}, "
                      "bf16 identical {:.3f} %. Emulation vs MUFU (paper: degree 3 within 1 bf16 ULP on 99 %):\n\n"
                      "| degree | bf16 identical | within 1 bf16 ULP | max fp32 ULP |\n|---|---|---|---|\n",
                      m.at("max_rel").get<double>(), m.at("identical_pct").get<double>());
    for (const auto& v : h.at("emulation_vs_mufu"))
      md += fmt::format("| {} | {:.3f} % | {:.3f} % | {:.0f} |\n", v.at("degree").get<int>(),
                        v.at("identical_pct").get<double>(), v.at("within_1ulp_pct").get<double>(),
                        v.at("max_ulp_f32").get<double>());
    md += "\n";
  }
  md += "Provenance (commands, GPU, driver, clocks, date): data/gpu/README.md.\n\n";
}

}  // namespace fa4sim::cli
