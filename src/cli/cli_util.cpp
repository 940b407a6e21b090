#include "cli_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "fa4sim/core/online_softmax.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/parse.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim::cli {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out = split_on(s, sep);
  for (auto& x : out) x = trim_blanks(x);
  return out;
}

double parse_double(const std::string& opt, const std::string& s, bool allow_nonfinite) {
  if (s.empty()) throw Error(fmt::format("{} needs a number, got an empty value", opt));
  const std::optional<double> v = strtod_whole(s);
  if (!v) {
    if (s.find(',') != std::string::npos)
      throw Error(fmt::format("{} takes one number, got the list '{}'", opt, s), "give one value");
    throw Error(fmt::format("{} expects a number, got '{}'", opt, s), "e.g. 8 or -20.5");
  }
  if (!allow_nonfinite && !std::isfinite(*v))
    throw Error(fmt::format("{} must be finite, got '{}'", opt, s));
  return *v;
}

int64_t parse_int(const std::string& opt, const std::string& s, int64_t lo, int64_t hi) {
  const double v = parse_double(opt, s, true);
  if (std::isnan(v) || v != std::floor(v) || std::fabs(v) > 9.0e18) {
    // Bounds that only guard the conversion (|x| ~ 2^62) would read as noise in the hint.
    const bool meaningful = lo > -1000000000000LL && hi < 1000000000000LL;
    throw Error(fmt::format("{} expects an integer, got '{}'", opt, s),
                meaningful ? fmt::format("valid: {}..{}", lo, hi) : std::string("e.g. 1000 or 1e6"));
  }
  if (v < static_cast<double>(lo) || v > static_cast<double>(hi))
    throw Error(fmt::format("{} = {} is out of range", opt, s), fmt::format("valid: {}..{}", lo, hi));
  return static_cast<int64_t>(v);
}

std::vector<int64_t> parse_int_list(const std::string& opt, const std::string& s, int64_t lo,
                                    int64_t hi) {
  std::vector<int64_t> out;
  for (const auto& part : split(s, ',')) out.push_back(parse_int(opt, part, lo, hi));
  return out;
}

std::vector<double> parse_double_list(const std::string& opt, const std::string& s) {
  std::vector<double> out;
  for (const auto& part : split(s, ',')) out.push_back(parse_double(opt, part));
  return out;
}

std::pair<double, double> parse_range(const std::string& opt, const std::string& s) {
  const auto parts = split(s, ',');
  if (parts.size() != 2)
    throw Error(fmt::format("{} expects LO,HI, got '{}'", opt, s), "e.g. --range -20,8");
  const double lo = parse_double(opt, parts[0]), hi = parse_double(opt, parts[1]);
  if (!(lo < hi))
    throw Error(fmt::format("{} is empty: LO = {} is not below HI = {}", opt, parts[0], parts[1]),
                fmt::format("did you mean {},{}?", parts[1], parts[0]));
  return {lo, hi};
}

std::optional<std::string> did_you_mean(const std::string& s, const std::vector<std::string>& cands) {
  return fa4sim::did_you_mean(s, cands);
}

std::string parse_choice(const std::string& opt, const std::string& s,
                         const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  throw_unknown_choice(opt, s, choices);
}

CLI::Option* add_hidden_alias(CLI::App* sub, const std::string& old_name, std::string& var) {
  return sub->add_option(old_name, var)->group("");
}

bool given(const CLI::App* sub, const std::string& name, const std::string& alias) {
  return sub->count(name) > 0 || (!alias.empty() && sub->count(alias) > 0);
}

const CLI::Validator& non_empty_path() {
  static const CLI::Validator v(
      [](std::string& s) {
        return s.empty() ? std::string("needs a path (a file name, or - for stdout), got ''")
                         : std::string();
      },
      "", "non-empty path");
  return v;
}

CLI::Option* checked(CLI::Option* o, const std::string& range, ValueCheck check) {
  const std::string opt = o->get_name();
  // The check throws fa4sim::Error, which CLI11 passes through to main (it catches only its own
  // ValidationError), so the message is the command's, not CLI11's.
  return o->check(CLI::Validator(
      [opt, check = std::move(check)](std::string& value) {
        if (!value.empty()) check(opt, value);
        return std::string();
      },
      range));
}

namespace {
std::string int_text(int64_t v) {
  for (int k = 20; k < 63; ++k) {
    if (v == (int64_t(1) << k)) return fmt::format("2^{}", k);
    if (v == (int64_t(1) << k) - 1) return fmt::format("2^{}-1", k);
  }
  if (v == std::numeric_limits<int64_t>::max()) return "2^63-1";
  return std::to_string(v);
}
}  // namespace

std::string range_text(int64_t lo, int64_t hi) { return int_text(lo) + ".." + int_text(hi); }

CLI::Option* int_in(CLI::Option* o, int64_t lo, int64_t hi) {
  return checked(o, range_text(lo, hi),
                 [lo, hi](const std::string& opt, const std::string& v) { parse_int(opt, v, lo, hi); });
}

CLI::Option* ints_in(CLI::Option* o, int64_t lo, int64_t hi) {
  return checked(o, range_text(lo, hi),
                 [lo, hi](const std::string& opt, const std::string& v) { parse_int_list(opt, v, lo, hi); });
}

CLI::Option* zero_ones(CLI::Option* o) {
  return checked(o, "", [](const std::string& opt, const std::string& v) { parse_int_list(opt, v, 0, 1); })
      ->type_name("0|1[,0|1...]");
}

CLI::Option* log2_knob(CLI::Option* o) {
  return checked(o, fmt::format("0..{:g}", kMaxLog2Knob), [](const std::string& opt, const std::string& v) {
    check_log2_knob(opt, parse_double(opt, v));
  });
}

CLI::Option* log2_knobs(CLI::Option* o) {
  return checked(o, fmt::format("0..{:g}", kMaxLog2Knob), [](const std::string& opt, const std::string& v) {
    for (double x : parse_double_list(opt, v)) check_log2_knob(opt, x);
  });
}

CLI::Option* positive(CLI::Option* o, const std::string& hint) {
  return checked(o, ">0", [hint](const std::string& opt, const std::string& v) {
    if (!(parse_double(opt, v) > 0)) throw Error(fmt::format("{} must be finite and > 0, got {}", opt, v), hint);
  });
}

void add_common_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option("--json", o.json_path,
                  "Write the JSON report to FILE (atomically), or to stdout with '-'")
      ->type_name("FILE|-")
      ->check(non_empty_path());
  int_in(sub->add_option("--threads", o.threads, "Worker threads (0 = all cores)"), 0, 1024)->type_name("T");
}

int resolved_threads(const CommonOptions& o) {
  return o.threads > 0 ? o.threads : default_threads();
}

}  // namespace fa4sim::cli
