// `fa4sim rescale`: online softmax with conditional rescaling; how often rows and warps rescale,
// what it costs in output error, and where FP8 saturates. Parses and validates the options, then
// calls run_rescale() (src/analysis/rescale.cpp). The report's section: src/report/section_rescale.cpp.
#include <cstdio>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/seed.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/rescale.h"
#include "fa4sim/options/rescale_options.h"

namespace fa4sim::cli {

void add_rescale(CLI::App& root) {
  static RescaleCliOptions o;
  auto* sub = root.add_subcommand(
      "rescale",
      "Online softmax with conditional rescaling (FA4's tau): rescale counts per row and per "
      "warp, output and LSE error vs float64, FP8 saturation");
  checked(sub->add_option("--tau", o.tau,
                          "Rescale thresholds in log2 units (0 = rescale on every increase)"),
          fmt::format("0..{:g}", kMaxLog2Knob),
          [](const std::string& opt, const std::string& v) {
            for (double t : parse_rescale_taus(v)) check_log2_knob(opt, t);
          })
      ->type_name("T[,T...]")
      ->capture_default_str();
  sub->add_option("--dtype", o.dtype,
                  "P's MMA input types: bf16, fp16, e4m3, e5m2 (fp32 = no cast)")
      ->type_name("DTYPE[,DTYPE...]")
      ->capture_default_str();
  log2_knob(sub->add_option(
                "--max-offset", o.max_offset,
                "P is scaled by 2^M before the cast, M in log2 units (default: the kernel's, 8 "
                "for FP8, 0 otherwise)"))
      ->type_name("M");
  sub->add_option(
         "--dist", o.dist,
         "Score distributions (log2 units): normal:SIGMA, rise:TOTAL[:SIGMA] (N(0,SIGMA^2) + "
         "TOTAL*k/keys, SIGMA 1.5), peaked (N(0,6^2)), file:PATH.npy (2-D float32)")
      ->type_name("DIST[,DIST...]")
      ->capture_default_str();
  int_in(sub->add_option("--rows", o.rows, "Query rows"), 1, kRescaleMaxDim)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--keys", o.keys, "Keys per row"), 1, kRescaleMaxDim)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--block-n", o.block, "Keys per block (a ragged last block is masked)"), 1,
         kRescaleMaxDim)
      ->type_name("N")
      ->capture_default_str();
  add_hidden_alias(sub, "--block", o.block);
  int_in(sub->add_option("--d", o.d, "Head dimension (columns of V)"), 1, 4096)
      ->type_name("D")
      ->capture_default_str();
  sub->add_option("--v-dist", o.v_dist, "V's entries: normal (N(0,1)) or uniform (U[-1,1))")
      ->type_name("DIST")
      ->capture_default_str();
  sub->add_option(
         "--exp", o.exp,
         "exp2 for P: exact (float64 argument, rounded once), mufu (the H200's ex2/rcp/lg2.approx, "
         "bit-exact models; loads data/mufu/ once), cr (fast mode: correctly rounded float32, not "
         "bit-exact with hardware), emu0..emu5 (ex2_emulation of that degree), "
         "schedule:FREQ[,RES[,START_FRG]] (upstream's mix; emu and schedule run the rest on the "
         "modelled MUFU)")
      ->type_name("MODE")
      ->capture_default_str();
  positive(sub->add_option(
               "--softmax-scale", o.scale,
               "Softmax scale (natural units): scale_log2 = SCALE * log2(e); default: scores "
               "are log2 units (scale_log2 = 1)"),
           "e.g. 0.0883883 = 1/sqrt(128)")
      ->type_name("X");
  add_hidden_alias(sub, "--scale", o.scale);
  sub->add_option("--order", o.order,
                  "Key-block order: forward (the article's), reverse (the sm100 kernel's), auto = "
                  "forward for synthetic scores, reverse for file: scores")
      ->type_name("ORDER")
      ->capture_default_str();
  int_in(
      sub->add_option("--warp-rows", o.warp_rows, "Rows per warp for the rescale vote (sm100: 32)"),
      1, 1024)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--seed", o.seed, "First seed"), 0, int64_t(1) << 53)
      ->type_name("S")
      ->capture_default_str();
  int_in(sub->add_option("--seeds", o.seeds, "Repeat over N seeds (S..S+N-1): mean, sd, min, max"),
         1, 10000)
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--rng", o.rng,
                  "Generator: fa4sim (own, thread-count independent) or numpy:SEED (NumPy's "
                  "default_rng(SEED) streams, bit for bit: the seed article's draws; SEED 0..2^53)")
      ->type_name("GEN")
      ->capture_default_str();
  sub->add_flag(
      "--allow-saturation", o.allow_saturation,
      "Run (tau, dtype) pairs that break max_offset + tau < log2(dtype_max) (to reproduce "
      "upstream issue #2716)");
  sub->add_flag("--counts-only", o.counts_only,
                "Only count rescales and saturations (no P @ V, no reference, no errors)");
  add_common_options(sub, o.common);
  sub->callback([sub] {
    Stopwatch sw;
    const RescaleConfig c = parse_rescale_options(o, given_in(sub));
    validate_rescale_config(c);
    check_report_path(o.common.json_path);
    const Report r = run_rescale(c);
    emit(r, o.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
