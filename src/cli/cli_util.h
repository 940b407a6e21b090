// cli_util.h: strict parsing of option values into typed values, with fa4sim-style errors.
// Options are taken as strings by CLI11 and parsed here so that every bad value gets
// "fa4sim: error: <what> (<hint>)" and exit code 2.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fa4sim::cli {

// Parses a whole string as a double; "nan"/"inf" allowed only when allow_nonfinite.
double parse_double(const std::string& opt, const std::string& s, bool allow_nonfinite = false);
// Parses an integer exactly, never through a double (also "1e6"-style exact integers: 2.5e3,
// 9007199254740993). Range-checked, inclusive.
int64_t parse_int(const std::string& opt, const std::string& s, int64_t lo, int64_t hi);
// The items of a comma-separated list option, trimmed of blanks; an empty item or an item given
// twice is an error naming `opt` ("--tau needs a number in every item ..."; docs/input-policy.md).
// `noun` says what an item is: "a number", "a name".
std::vector<std::string> list_items(const std::string& opt, const std::string& s, const std::string& noun);
// Comma-separated lists through list_items; numbers that repeat in another spelling (8, 8.0) are
// refused too.
std::vector<int64_t> parse_int_list(const std::string& opt, const std::string& s, int64_t lo,
                                    int64_t hi);
std::vector<double> parse_double_list(const std::string& opt, const std::string& s);
std::vector<std::string> split(const std::string& s, char sep);
// "LO,HI" with LO < HI, both finite.
std::pair<double, double> parse_range(const std::string& opt, const std::string& s);
// Picks `s` from `choices` or throws an error that lists them and suggests the nearest.
std::string parse_choice(const std::string& opt, const std::string& s,
                         const std::vector<std::string>& choices);

// Levenshtein-nearest candidate within a small distance, or nullopt.
std::optional<std::string> did_you_mean(const std::string& s, const std::vector<std::string>& cands);

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
// How --help writes lo..hi: "1..65535", "1..2^20", "0..2^53", "0..2^63-1".
std::string range_text(int64_t lo, int64_t hi);

// Adds the options every analysis command has: --json FILE|-, --threads T.
struct CommonOptions {
  std::string json_path;
  int threads = 0;  // 0 = all cores
};
void add_common_options(CLI::App* sub, CommonOptions& o);
int resolved_threads(const CommonOptions& o);

}  // namespace fa4sim::cli
