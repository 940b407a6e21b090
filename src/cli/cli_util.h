// cli_util.h: the CLI11 side of the options: checks attached to options as CLI11 reads them
// (with the messages of util/parse.h, so that every bad value gets "fa4sim: error: <what>
// (<hint>)" and exit code 2), the input policy, --json/--threads. The option sets shared with the
// Python module are include/fa4sim/options/; the string parsing is include/fa4sim/util/parse.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fa4sim/options/common.h"
#include "fa4sim/util/parse.h"

namespace fa4sim::cli {

// Refuses an empty value (--json '' would otherwise mean "no report", silently).
const CLI::Validator& non_empty_path();

// ---- the input policy (docs/input-policy.md)
// Adds to every option of `app` and its subcommands a check that refuses an empty value, except
// options whose --help says what '' means ("'' = skip torch") and those marked below.
void refuse_empty_values(CLI::App& app);
// Marks an option whose command refuses '' with its own message (report --only, exp2 --coeffs).
CLI::Option* refuses_empty_itself(CLI::Option* o);
// "fa4sim: warning: <option> has no effect with <with> (<why>)" on stderr: an option the chosen
// mode ignores (the run goes on).
void warn_ignored(const std::string& option, const std::string& with, const std::string& why);

// An old spelling kept as a hidden alias of `canonical` (same variable, not in --help): one
// spelling per idea across commands (--d, --order, --block-n, --softmax-scale), old scripts work.
CLI::Option* add_hidden_alias(CLI::App* sub, const std::string& old_name, std::string& var);
// Whether the option was given under its name or its hidden alias.
bool given(const CLI::App* sub, const std::string& name, const std::string& alias = "");

// ---- numbers: the range in --help is the range that is checked
//
// An option that takes a number shows its range after its type name (`--batch N:1..65535`,
// `--tau T:0..64`, `--q-scale ALPHA:>0`), and CLI11 checks the value as it parses it with the
// function the command parses it with: the same message (`fa4sim: error: <what> (<hint>)`, exit 2)
// as before, only earlier. An empty value never reaches the check: refuse_empty_values refuses it.
using ValueCheck = std::function<void(const std::string& opt, const std::string& value)>;
// Adds `check` to `o` and shows `range` after its type name (none when empty: the help text
// states it, e.g. for LO:HI:STEP).
CLI::Option* checked(CLI::Option* o, const std::string& range, ValueCheck check);
// An integer lo..hi (parse_int); a comma-separated list of them (parse_int_list).
CLI::Option* int_in(CLI::Option* o, int64_t lo, int64_t hi);
CLI::Option* ints_in(CLI::Option* o, int64_t lo, int64_t hi);
// A comma-separated list of 0 and 1 (no and yes), shown as 0|1[,0|1...].
CLI::Option* zero_ones(CLI::Option* o);
// A threshold or offset in log2 units, 0..64 (check_log2_knob); a list of them.
CLI::Option* log2_knob(CLI::Option* o);
CLI::Option* log2_knobs(CLI::Option* o);
// A finite number > 0 (parse_double); `hint` is the error's hint, e.g. "e.g. --q-scale 8" (or none).
CLI::Option* positive(CLI::Option* o, const std::string& hint);
// Adds the options every analysis command has: --json FILE|-, --threads T (options/common.h).
void add_common_options(CLI::App* sub, CommonOptions& o);
// The OptionGiven of `sub`: whether the user gave the option on the command line.
OptionGiven given_in(const CLI::App* sub);

}  // namespace fa4sim::cli
