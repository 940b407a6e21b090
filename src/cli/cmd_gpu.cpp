// `fa4sim gpu info | verify | bench-exp`: the CUDA backend's commands. Parses and validates,
// then calls the library (src/gpu/gpu_verify.cpp, src/gpu/gpu_bench.cpp). Without a usable device every
// subcommand fails with "fa4sim: error: no CUDA device ..." and exit code 3, after its options
// were validated (bad options are still exit code 2).
// The report's section `gpu` (the committed H200 data) is src/report/section_gpu.cpp.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_bench.h"
#include "fa4sim/gpu/gpu_verify.h"
#include "fa4sim/gpu/gpu_wgmma_verify.h"
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
  std::string tiles = "25000", wgmma_seed = "1", sample;
  bool wgmma_opt_given = false;
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

// `--what wgmma`: the tensor core against core/wgmma_model.h (gpu_wgmma_verify.h).
void run_verify_wgmma(const GpuCliOptions& o) {
  GpuWgmmaOptions w;
  w.tiles = uint64_t(parse_int("--tiles", o.tiles, 1, 10000000));
  w.seed = uint64_t(parse_int("--seed", o.wgmma_seed, 0, int64_t(1) << 53));
  w.sample_dir = o.sample;
  if (!w.sample_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(w.sample_dir, ec);
    if (ec || !std::filesystem::is_directory(w.sample_dir))
      throw Error(fmt::format("--sample: '{}' is not a directory fa4sim can create", w.sample_dir),
                  "pass a writable directory");
    check_output_path(w.sample_dir + "/wgmma-bf16.npy", "--sample");
  }
  check_report_path(o.verify_common.json_path);
  Stopwatch sw;
  const auto results = run_gpu_wgmma_verify(w);
  emit(gpu_wgmma_report(w, results, gpu::device_info()), o.verify_common.json_path, sw.seconds());
  if (!gpu_wgmma_passed(results))
    throw Error("gpu verify: wgmma and the CPU model differ (or the harness failed)",
                "see the table and the first mismatches above", kExitCheckFailed);
}

void run_verify(const GpuCliOptions& o) {
  GpuVerifyOptions v;
  v.what = parse_choice("--what", o.what, {"exp2", "formats", "mufu", "wgmma", "all"});
  if (v.what == "wgmma") return run_verify_wgmma(o);
  if (o.wgmma_opt_given)
    throw Error("--tiles, --seed and --sample are the wgmma check's", "add --what wgmma");
  v.degrees = to_ints(parse_int_list("--degree", o.verify_degree, 0, 5));
  if (!o.verify_coeffs.empty()) {
    if (o.verify_degree_given)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)",
                  "leave --degree out");
    if (v.what == "formats" || v.what == "mufu")
      throw Error("--coeffs needs --what exp2 or all", "the coefficients are exp2's");
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
    throw Error(
        fmt::format("gpu verify: {} mismatches between the GPU and the CPU emulators", total),
        "the CPU emulator is wrong where they differ: see the first mismatches above",
        kExitCheckFailed);
}

void run_bench(const GpuCliOptions& o, const std::string& command) {
  GpuBenchOptions b;
  b.degrees = to_ints(parse_int_list("--degree", o.bench_degree, 0, 5));
  b.reps = static_cast<int>(parse_int("--reps", o.reps, 1, 101));
  if (!o.bench_coeffs.empty()) {
    if (o.bench_degree_given)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)",
                  "leave --degree out");
    b.coeffs = load_coeffs("--coeffs", o.bench_coeffs);
    b.degrees = {static_cast<int>(b.coeffs.size()) - 1};
  }
  validate(b);
  check_report_path(o.bench_common.json_path);
  if (!o.out.empty() && o.out != "none") check_output_path(o.out, "--out");
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
    std::fprintf(stderr,
                 "fa4sim gpu bench-exp: wrote %s (read it with 'fa4sim roofline --measured %s')\n",
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

  auto* info = gpu->add_subcommand("info",
                                   "Print the CUDA device, SM count, clocks and driver "
                                   "(exit code 3 when there is no CUDA device)");
  add_common_options(info, o.info_common);
  info->callback([] { run_info(o); });

  auto* verify = gpu->add_subcommand(
      "verify",
      "Run the GPU's own exp2, conversion and MUFU (ex2, rcp, lg2) instructions on all 2^32 float32 "
      "inputs and compare every result bit with the CPU emulators (exit code 1 on any mismatch)");
  verify
      ->add_option("--what", o.what,
                   "Which functions: exp2 (the emulation, per degree), formats "
                   "(e4m3/e5m2 satfinite, bf16, fp16, and their satfinite forms), mufu "
                   "(ex2/rcp/lg2.approx.ftz.f32 against the measured tables), wgmma (the tensor "
                   "core's bf16/fp16/e4m3/e5m2 accumulation against core/wgmma_model.h over "
                   "--tiles wgmmas per type; not part of all), all")
      ->type_name("SET")
      ->capture_default_str();
  auto* vdeg =
      ints_in(verify->add_option("--degree", o.verify_degree, "exp2 emulation degrees"), 0, 5);
  vdeg->type_name("N[,N...]")->capture_default_str();
  verify
      ->add_option("--coeffs", o.verify_coeffs,
                   "Verify the emulation with these float32 coefficients (c0,c1,... or a file, as "
                   "`fa4sim exp2 --coeffs`) instead of POLY_EX2; sets the degree")
      ->type_name("FILE|c0,c1,...");
  auto* vtiles = int_in(verify->add_option("--tiles", o.tiles,
                                           "wgmma: m64n64 wgmmas per input type (4096 dot "
                                           "products each)"),
                        1, 10000000);
  vtiles->type_name("N")->capture_default_str();
  auto* vseed =
      int_in(verify->add_option("--seed", o.wgmma_seed, "wgmma: seed of the counter-based inputs"),
             0, int64_t(1) << 53);
  vseed->type_name("S")->capture_default_str();
  auto* vsample = verify
                      ->add_option("--sample", o.sample,
                                   "wgmma: write the first 25 tiles' inputs and GPU results to "
                                   "DIR/wgmma-<type>.npy (scripts/check/check_wgmma_mmasim.py)")
                      ->type_name("DIR")
                      ->check(non_empty_path());
  add_common_options(verify, o.verify_common);
  verify->callback([vdeg, vtiles, vseed, vsample] {
    o.verify_degree_given = vdeg->count() > 0;
    o.wgmma_opt_given = vtiles->count() + vseed->count() + vsample->count() > 0;
    run_verify(o);
  });

  auto* bench = gpu->add_subcommand(
      "bench-exp",
      "Measure exp2 throughput (exps per clock per SM): MUFU, emulation, mixtures f = 0..1 in 1/16 "
      "steps and the upstream interleaving rule; writes the roofline's measured-data file");
  auto* bdeg = ints_in(bench->add_option("--degree", o.bench_degree, "Emulation degrees"), 0, 5);
  bdeg->type_name("N[,N...]")->capture_default_str();
  bench
      ->add_option(
          "--coeffs", o.bench_coeffs,
          "Time the emulation with these float32 coefficients at f = 0..1 (the mix points; "
          "the interleaving-rule points keep POLY_EX2); sets the degree")
      ->type_name("FILE|c0,c1,...");
  int_in(bench->add_option("--reps", o.reps, "Timed launches per point (median)"), 1, 101)
      ->type_name("N")
      ->capture_default_str();
  bench
      ->add_option("--out", o.out,
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
