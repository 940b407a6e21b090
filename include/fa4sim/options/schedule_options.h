// schedule_options.h: the option set of `fa4sim schedule` and what it becomes, in one place: the
// CLI (src/cli/cmd_schedule.cpp: CLI11 declarations, ranges, --help) and the Python module's
// `fa4sim.schedule()` build the same ScheduleModelOptions and the same --inputs report.
#pragma once

#include <string>
#include <vector>

#include "fa4sim/analysis/schedule.h"
#include "fa4sim/options/common.h"

namespace fa4sim {

struct ScheduleCliOptions {
  std::string arch = "h200";
  std::vector<std::string> arch_files;
  std::string spec;
  int batch = 4, heads = 32, kv_heads = 0, seq = 4096, seq_k = 0, d = 128, causal = 0;
  double tau = 0, emu_fraction = 0, rescale_share = Tricks{}.rescale_share;
  double clock_mhz = 0;  // 0: the power-cap clock line's
  int degree = 3;
  std::string tile;
  bool no_search = false;
  std::string inputs;
  std::string
      kernel_factors;  // "" the default spec's file, "none", or a path (Note [Kernel factors])
  CommonOptions common;
};

// --arch (names or arch JSON paths, comma-separated), then the --arch-file ones. An unknown name
// is refused with the known ones listed, as `opt` (the option or the entry it came from).
std::vector<ArchSpec> schedule_archs(const std::string& arch,
                                     const std::vector<std::string>& arch_files,
                                     const std::string& opt = "--arch");

// The one configuration the options describe (kv_heads 0 = heads, seq_k 0 = seq).
ScheduleInput schedule_input(const ScheduleCliOptions& c);

// The model's options (archs, spec, input, search) with the report's params.
ScheduleModelOptions schedule_model_options(const ScheduleCliOptions& c);

// --inputs: a JSON list of {arch, batch, heads, heads_kv, seq, seq_k, d, causal, tau,
// emu_fraction, degree, rescale_share, clock_mhz, tile: [m, n]}, missing keys taken from `c`; one
// prediction per entry (results.predictions). `source` names the list in the params and the
// table, `where` in messages ("inputs file 'x.json'", or the Python argument "inputs").
Report schedule_inputs_report(const ScheduleCliOptions& c, const json& list,
                              const std::string& source, const std::string& where);

}  // namespace fa4sim
