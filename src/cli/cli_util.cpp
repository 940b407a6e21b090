#include "cli_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
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

namespace {

[[noreturn]] void throw_not_a_number(const std::string& opt, const std::string& s, const std::string& hint) {
  if (s.find(',') != std::string::npos)
    throw Error(fmt::format("{} takes one number, got the list '{}'", opt, s), "give one value");
  throw Error(fmt::format("{} expects a number, got '{}'", opt, s), hint);
}

// An integer literal read exactly: [+-]digits[.digits][e[+-]digits] with a whole value (1e6,
// 2.5e3, 9007199254740993), never through a double. kNotLiteral for anything else (hex, inf).
struct ExactInt {
  enum Kind { kValue, kFraction, kTooLarge, kNotLiteral } kind = kNotLiteral;
  int64_t value = 0;
  bool negative = false;
};

ExactInt exact_int(const std::string& text) {
  ExactInt r;
  size_t i = text.find_first_not_of(" \t");
  if (i == std::string::npos) return r;
  if (text[i] == '+' || text[i] == '-') r.negative = text[i++] == '-';
  std::string digits;  // the significant digits, int part then fraction
  int64_t exp10 = 0;
  size_t n_digits = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++n_digits) digits += text[i];
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++n_digits)
      digits += text[i], --exp10;
  if (n_digits == 0) return r;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    const bool eneg = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    int64_t e = 0;
    size_t e_digits = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++e_digits)
      e = std::min<int64_t>(e * 10 + (text[i] - '0'), 1000000);
    if (e_digits == 0) return r;
    exp10 += eneg ? -e : e;
  }
  if (i != text.size()) return r;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  for (; exp10 < 0 && !digits.empty(); ++exp10) {  // drop the fraction's digits: zeros only
    if (digits.back() != '0') {
      r.kind = ExactInt::kFraction;
      return r;
    }
    digits.pop_back();
  }
  if (digits.empty()) {
    r.kind = ExactInt::kValue;
    return r;
  }
  if (int64_t(digits.size()) + exp10 > 19) {
    r.kind = ExactInt::kTooLarge;
    return r;
  }
  digits.append(size_t(exp10), '0');
  unsigned __int128 v = 0;
  for (char ch : digits) v = v * 10 + unsigned(ch - '0');
  const auto limit = static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + (r.negative ? 1u : 0u);
  if (v > limit) {
    r.kind = ExactInt::kTooLarge;
    return r;
  }
  r.kind = ExactInt::kValue;
  r.value = r.negative ? -static_cast<int64_t>(v - 1) - 1 : static_cast<int64_t>(v);  // -2^63 fits
  return r;
}

}  // namespace

double parse_double(const std::string& opt, const std::string& s, bool allow_nonfinite) {
  if (s.empty()) throw Error(fmt::format("{} needs a number, got an empty value", opt));
  const std::optional<double> v = strtod_whole(s);
  if (!v) throw_not_a_number(opt, s, "e.g. 8 or -20.5");
  if (!allow_nonfinite && !std::isfinite(*v))
    throw Error(fmt::format("{} must be finite, got '{}'", opt, s));
  return *v == 0 ? 0.0 : *v;  // -0 is 0 (docs/input-policy.md)
}

int64_t parse_int(const std::string& opt, const std::string& s, int64_t lo, int64_t hi) {
  // Bounds that only guard the conversion (-2^62) would read as noise in the hint.
  const std::string valid = lo < -1000000000000LL ? "e.g. 1000 or 1e6" : "valid: " + range_text(lo, hi);
  if (s.empty()) throw Error(fmt::format("{} needs a number, got an empty value", opt));
  ExactInt e = exact_int(s);
  if (e.kind == ExactInt::kNotLiteral) {  // hex integers, inf, nan: read as a double
    const std::optional<double> v = strtod_whole(s);
    if (!v) throw_not_a_number(opt, s, valid);
    if (std::isinf(*v)) e.kind = ExactInt::kTooLarge, e.negative = *v < 0;
    else if (std::isnan(*v) || *v != std::floor(*v)) e.kind = ExactInt::kFraction;
    else if (std::fabs(*v) >= 0x1p63) e.kind = ExactInt::kTooLarge, e.negative = *v < 0;
    else e.kind = ExactInt::kValue, e.value = static_cast<int64_t>(*v);
  }
  if (e.kind == ExactInt::kFraction) throw Error(fmt::format("{} expects an integer, got '{}'", opt, s), valid);
  if (e.kind == ExactInt::kTooLarge || e.value < lo || e.value > hi)
    throw Error(fmt::format("{} = {} is out of range", opt, s), valid);
  return e.value;
}

std::vector<std::string> list_items(const std::string& opt, const std::string& s, const std::string& noun) {
  std::vector<std::string> items = split(s, ',');
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty())
      throw Error(fmt::format("{} needs {} in every item of the list, got '{}'", opt, noun, s),
                  "separate the items by single commas, e.g. 1,3");
    for (size_t j = 0; j < i; ++j)
      if (items[j] == items[i])
        throw Error(fmt::format("{} lists '{}' twice", opt, items[i]), "give each value once");
  }
  return items;
}

namespace {
// Refuses a list whose numbers repeat in another spelling (8 and 8.0).
template <typename T>
void refuse_repeated_numbers(const std::string& opt, const std::vector<T>& v, const std::vector<std::string>& text) {
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (v[j] == v[i])
        throw Error(fmt::format("{} lists the same value twice ('{}' and '{}')", opt, text[j], text[i]),
                    "give each value once");
}
}  // namespace

std::vector<int64_t> parse_int_list(const std::string& opt, const std::string& s, int64_t lo,
                                    int64_t hi) {
  const std::vector<std::string> items = list_items(opt, s, "a number");
  std::vector<int64_t> out;
  for (const auto& part : items) out.push_back(parse_int(opt, part, lo, hi));
  refuse_repeated_numbers(opt, out, items);
  return out;
}

std::vector<double> parse_double_list(const std::string& opt, const std::string& s) {
  const std::vector<std::string> items = list_items(opt, s, "a number");
  std::vector<double> out;
  for (const auto& part : items) out.push_back(parse_double(opt, part));
  refuse_repeated_numbers(opt, out, items);
  return out;
}

std::pair<double, double> parse_range(const std::string& opt, const std::string& s) {
  const auto parts = split(s, ',');
  if (parts.size() != 2)
    throw Error(fmt::format("{} expects LO,HI, got '{}'", opt, s), "e.g. --range -20,8");
  const double lo = parse_double(opt, parts[0]), hi = parse_double(opt, parts[1]);
  if (!(lo < hi))  // suggest the swapped range only when it is not empty too (1,1 or -0,0)
    throw Error(fmt::format("{} is empty: LO = {} is not below HI = {}", opt, parts[0], parts[1]),
                hi < lo ? fmt::format("did you mean {},{}?", parts[1], parts[0]) : "give LO < HI, e.g. -20,8");
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

// ---- the input policy (docs/input-policy.md)

namespace {
std::vector<const CLI::Option*>& options_with_own_empty_message() {
  static std::vector<const CLI::Option*> v;
  return v;
}
}  // namespace

CLI::Option* refuses_empty_itself(CLI::Option* o) {
  options_with_own_empty_message().push_back(o);
  return o;
}

void refuse_empty_values(CLI::App& app) {
  const auto& own = options_with_own_empty_message();
  for (CLI::Option* o : app.get_options([](CLI::Option*) { return true; })) {
    // Flags and positionals take no option value; an option whose --help says what '' means
    // (gpu attention --python '') keeps that meaning.
    if (o->get_lnames().empty() || o->get_expected_min() == 0) continue;
    if (o->get_description().find("'' =") != std::string::npos) continue;
    if (std::find(own.begin(), own.end(), o) != own.end()) continue;
    const std::string name = "--" + o->get_lnames().front();
    o->check(CLI::Validator(
        [name](std::string& v) {
          if (v.empty())
            throw Error(fmt::format("{} needs a value, got an empty one", name),
                        "leave the option out for its default");
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) refuse_empty_values(*sub);
}

void warn_ignored(const std::string& option, const std::string& with, const std::string& why) {
  std::fprintf(stderr, "fa4sim: warning: %s has no effect with %s (%s)\n", option.c_str(), with.c_str(),
               why.c_str());
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
