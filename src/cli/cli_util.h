// cli_util.h: strict parsing of option values into typed values, with fa4sim-style errors.
// Options are taken as strings by CLI11 and parsed here so that every bad value gets
// "fa4sim: error: <what> (<hint>)" and exit code 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace fa4sim::cli {

// Parses a whole string as a double; "nan"/"inf" allowed only when allow_nonfinite.
double parse_double(const std::string& opt, const std::string& s, bool allow_nonfinite = false);
// Parses an integer (also "1e6"-style exact integers). Range-checked, inclusive.
int64_t parse_int(const std::string& opt, const std::string& s, int64_t lo, int64_t hi);
// Comma-separated lists.
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

// An old spelling kept as a hidden alias of `canonical` (same variable, not in --help): one
// spelling per idea across commands (--d, --order, --block-n, --softmax-scale), old scripts work.
CLI::Option* add_hidden_alias(CLI::App* sub, const std::string& old_name, std::string& var);
// Whether the option was given under its name or its hidden alias.
bool given(const CLI::App* sub, const std::string& name, const std::string& alias = "");

// Adds the options every analysis command has: --json FILE|-, --threads T.
struct CommonOptions {
  std::string json_path;
  int threads = 0;  // 0 = all cores
};
void add_common_options(CLI::App* sub, CommonOptions& o);
int resolved_threads(const CommonOptions& o);

}  // namespace fa4sim::cli
