// `fa4sim schedule`: the schedule model's prediction of FA4's forward for a shape, an arch and
// the softmax tricks (include/fa4sim/analysis/schedule.h). With --inputs FILE it predicts every
// configuration of a JSON list in one run (sweeps, scripts/datagen/schedule_fit.py).
#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/util/error.h"
#include "fa4sim/options/roofline_options.h"
#include "fa4sim/options/schedule_options.h"

namespace fa4sim::cli {

void add_schedule(CLI::App& root) {
  static ScheduleCliOptions c;
  auto* sub = root.add_subcommand(
      "schedule",
      "Predict FA4's forward time and TFLOP/s on an arch for a shape and the softmax tricks (schedule model: "
      "warps, pipes and MMAs overlapped as the kernel runs them), the binding resource, and the best (tau, fraction)");
  sub->add_option(
         "--arch", c.arch,
         "Architectures: names from data/archs (h100_sxm, h200, b200, b300) or arch JSON paths, comma-separated")
      ->type_name("NAME[,NAME...]")
      ->capture_default_str();
  sub->add_option("--arch-file", c.arch_files,
                  "Add a custom architecture JSON (schema fa4sim/arch-v1)")
      ->type_name("FILE");
  sub->add_option(
         "--spec", c.spec,
         "Kernel description (schema fa4sim/schedule-v1; default data/schedule/<sm90|sm100>.json)")
      ->type_name("FILE");
  int_in(sub->add_option("--batch", c.batch, "Batch size"), 1, 65535)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--heads", c.heads, "Query heads"), 1, 4096)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--kv-heads", c.kv_heads, "Key/value heads (GQA; 0 = heads)"), 0, 4096)
      ->type_name("N");
  int_in(sub->add_option("--seq", c.seq, "Sequence length (queries, and keys unless --seq-k)"), 1,
         1 << 22)
      ->type_name("S")
      ->capture_default_str();
  int_in(sub->add_option("--seq-k", c.seq_k, "Keys (0 = --seq)"), 0, 1 << 22)->type_name("S");
  int_in(sub->add_option("--d", c.d, "Head dimension: a multiple of 8, at most 256"), 8, 256)
      ->type_name("D")
      ->capture_default_str();
  int_in(sub->add_option("--causal", c.causal, "Causal mask (1) or none (0)"), 0, 1)
      ->type_name("0|1")
      ->capture_default_str();
  log2_knob(sub->add_option("--tau", c.tau,
                            "Conditional rescaling threshold in log2 units (0 = always rescale)"))
      ->capture_default_str();
  checked(
      sub->add_option("--emu-fraction", c.emu_fraction, "Share of exps emulated on the FMA pipe"),
      "0..1", [](const std::string&, const std::string& v) { parse_emu_fraction(v); })
      ->type_name("F")
      ->capture_default_str();
  int_in(sub->add_option("--degree", c.degree, "Polynomial degree of the emulated exp2"), 0, 5)
      ->type_name("N")
      ->capture_default_str();
  checked(
      sub->add_option(
          "--rescale-share", c.rescale_share,
          "With tau > 0: share of iterations in which a warp still rescales O (fa4sim rescale measures it)"),
      "0..1",
      [](const std::string& opt, const std::string& v) {
        const double x = parse_double(opt, v);
        if (!(x >= 0 && x <= 1))
          throw Error(fmt::format("{} = {} is outside [0, 1]", opt, v),
                      "a share of iterations, e.g. 0.02");
      })
      ->type_name("F")
      ->capture_default_str();
  checked(
      sub->add_option("--clock", c.clock_mhz,
                      "SM clock in MHz the kernel runs at (e.g. locked clocks; 0 = the clock under "
                      "the power cap, from the model's clock line)"),
      "0 or 100..10000",
      [](const std::string& opt, const std::string& v) {
        const double x = parse_double(opt, v);
        if (!(x == 0 || (x >= 100 && x <= 10000)))
          throw Error(fmt::format("{} = {} is not a clock", opt, v),
                      "give MHz in 100..10000, or 0 for the power-cap clock");
      })
      ->type_name("MHZ")
      ->capture_default_str();
  checked(
      sub->add_option(
          "--tile", c.tile,
          "Tile MxN instead of the kernel's own: M 64..256 a multiple of 64, N 16..256 a multiple of 16"),
      "", [](const std::string&, const std::string& v) { parse_tile(v); })
      ->type_name("MxN");
  sub->add_flag("--no-search", c.no_search, "Skip the search for the best (tau, fraction)");
  sub->add_option("--inputs", c.inputs,
                  "Predict every configuration of a JSON list instead (keys as the options)")
      ->type_name("FILE");
  sub->add_option(
         "--kernel-factors", c.kernel_factors,
         "Measured / modelled time per compiled kernel (H200), applied to the kernels it holds: a "
         "fa4sim/schedule-kernel-factors-v1 file, or 'none' for the model alone (default: "
         "data/schedule/sm90_kernel_factors.json without --spec, none with --spec)")
      ->type_name("FILE|none");
  add_common_options(sub, c.common);
  sub->callback([] {
    Stopwatch sw;
    check_report_path(c.common.json_path);
    if (!c.inputs.empty()) {
      const json list = read_json_file(c.inputs, "inputs file");
      emit(schedule_inputs_report(c, list, c.inputs, fmt::format("inputs file '{}'", c.inputs)),
           c.common.json_path, sw.seconds());
      return;
    }
    const ScheduleModelOptions o = schedule_model_options(c);
    const ScheduleModelResult r = compute_schedule(o);
    Report rep = schedule_report(o, r);
    emit(rep, c.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
