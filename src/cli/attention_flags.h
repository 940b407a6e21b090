// attention_flags.h: `fa4sim attention`'s options declared on a CLI::App (--help, types and
// ranges), for every command that takes them (`fa4sim attention`, `fa4sim gpu attention`); their
// parsing is the options layer's (include/fa4sim/options/attention_options.h).
#pragma once

#include <CLI/CLI.hpp>

#include "fa4sim/options/attention_options.h"

namespace fa4sim::cli {

void add_attention_options(CLI::App* sub, AttentionCliOptions& o);

}  // namespace fa4sim::cli
