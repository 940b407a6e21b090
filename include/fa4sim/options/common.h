// common.h: what every option set shares: the options of every analysis command (--json,
// --threads), the dtype options (a format name of a role, formats.h), and how an option set
// learns which options were given explicitly. The options layer (include/fa4sim/options/,
// src/options/) turns option strings into the analyses' configs with the CLI's messages; the CLI
// (src/cli: CLI11 declarations, --help) and the Python module (src/python) both sit on it.
// The string parsing itself is util/parse.h's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/util/parse.h"

namespace fa4sim {

// --json FILE|- and --threads T.
struct CommonOptions {
  std::string json_path;
  int threads = 0;  // 0 = all cores
};
int resolved_threads(const CommonOptions& o);

// Whether an option (by its name, "--seed") was given explicitly. The CLI asks its parser; the
// Python module gives none (its arguments carry no geometry options: no_options_given).
using OptionGiven = std::function<bool(const std::string& name)>;
bool no_options_given(const std::string& name);

// A format name of `role` (the error lists the role's names, formats.h) and the list form
// (list_items, then each item).
const Format& parse_dtype(const std::string& opt, const std::string& s, FormatRole role);
std::vector<const Format*> parse_dtype_list(const std::string& opt, const std::string& s,
                                            FormatRole role);

}  // namespace fa4sim
