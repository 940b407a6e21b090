// `fa4sim roofline`: per-architecture tile costs, the exp pipe model and the emulation schedule.
// Parses and validates the options, then calls run_roofline() (src/analysis/roofline.cpp). The
// report's section: src/report/section_roofline.cpp.
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/roofline.h"
#include "fa4sim/options/roofline_options.h"

namespace fa4sim::cli {

void add_roofline(CLI::App& root) {
  static RooflineCliOptions c;
  auto* sub = root.add_subcommand(
      "roofline",
      "Per-architecture FA4 tile costs (MMA, exp, smem), a pipe model of the emulated exp2, and the "
      "emulation-schedule calculator");
  sub->add_option(
         "--arch", c.arch,
         "Architectures: comma-separated names from data/archs (a100, h100_sxm, h200, b200, b300), "
         "'all', or a path to an arch JSON file")
      ->type_name("NAME|all|FILE")
      ->capture_default_str();
  sub->add_option(
         "--arch-file", c.arch_files,
         "Add a custom architecture JSON (schema fa4sim/arch-v1, format of data/archs/b200.json); "
         "may be repeated")
      ->type_name("FILE");
  ints_in(sub->add_option("--d", c.d, "Head dimension(s), comma-separated (default 128)"), 1,
          kRooflineMaxD)
      ->type_name("D[,D...]");
  checked(sub->add_option("--sweep-d", c.sweep_d,
                          "Head dimensions LO:HI:STEP, each 1..1024, e.g. 32:256:32"),
          "", [](const std::string&, const std::string& v) { parse_sweep(v); })
      ->type_name("LO:HI:STEP");
  sub->add_option(
         "--dtype", c.dtype,
         "MMA operand type: bf16 (stands for fp16 too: same bytes, same rate), fp8, fp6 (MXFP6), fp4 (NVFP4/MXFP4, block-scaled), or all")
      ->type_name("bf16|fp8|fp6|fp4|all")
      ->capture_default_str();
  checked(sub->add_option(
              "--tile", c.tile,
              "Tile: M queries x N keys, each 1..4096 (N is also the schedule's row width)"),
          "", [](const std::string&, const std::string& v) { parse_tile(v); })
      ->type_name("MxN")
      ->capture_default_str();
  sub->add_option("--direction", c.direction, "fwd, bwd (1-CTA and 2-CTA rows) or all")
      ->type_name("fwd|bwd|all")
      ->capture_default_str();
  checked(sub->add_option(
              "--emu-fraction", c.emu_fraction,
              "Also give each tile's exp and softmax cycles with this fraction of exps emulated "
              "(pipe model)"),
          "0..1", [](const std::string&, const std::string& v) { parse_emu_fraction(v); })
      ->type_name("F");
  ints_in(sub->add_option("--degree", c.degree,
                          "Polynomial degree(s) of the emulated exp2 for the pipe model"),
          0, 5)
      ->type_name("N[,N...]")
      ->capture_default_str();
  sub->add_option(
         "--schedule", c.schedule,
         "Emulation schedule: with freq[,res[,start_frg]] (in columns, each 0..2^20, res < freq; "
         "defaults res 4, start_frg 0; 0 = none) compute that one; alone, list every entry of "
         "data/fa4_tuning.json")
      ->type_name("[FREQ,RES,START]")
      ->expected(0, 1);
  sub->add_option(
         "--measured", c.measured,
         "Compare the pipe model with measured exps/clk/SM (schema fa4sim/bench-exp-v1, e.g. "
         "data/gpu/<device>-bench-exp.json; see README)")
      ->type_name("FILE");
  add_common_options(sub, c.common);
  sub->callback([sub] {
    c.schedule_given = sub->count("--schedule") > 0;
    Stopwatch sw;
    const RooflineOptions o = parse_roofline_options(c);
    check_report_path(c.common.json_path);
    Report r = run_roofline(o);
    r.threads = resolved_threads(c.common);
    emit(r, c.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
