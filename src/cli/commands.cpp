#include "commands.h"

namespace fa4sim::cli {

const std::vector<CommandEntry>& commands() {
  static const std::vector<CommandEntry> kCommands = {
      {"attention", add_attention},
      {"block", add_block},
      {"check", add_check},
      {"exp2", add_exp2},
      {"fit", add_fit},
      {"formats", add_formats},
      {"gpu", add_gpu},
      {"quantize", add_quantize},
      {"report", add_report},
      {"rescale", add_rescale},
      {"roofline", add_roofline},
      {"schedule", add_schedule},
      {"version", add_version},
  };
  return kCommands;
}

}  // namespace fa4sim::cli
