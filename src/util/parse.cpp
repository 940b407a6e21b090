// parse.cpp: splitting and whole-string numbers for option values (see parse.h).
#include "fa4sim/util/parse.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim {

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string trim_blanks(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::optional<double> strtod_whole(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::string printable_text(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7e)
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  return out;
}

double parse_finite(const std::string& what, const std::string& s) {
  const std::optional<double> v = strtod_whole(s);
  if (!v || !std::isfinite(*v))
    throw Error(fmt::format("{}: expected a finite number, got '{}'", what, s));
  return *v;
}

// ---- typed option values, with the messages every command shares

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

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out = split_on(s, sep);
  for (auto& x : out) x = trim_blanks(x);
  return out;
}

namespace {

[[noreturn]] void throw_not_a_number(const std::string& opt, const std::string& s,
                                     const std::string& hint) {
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
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++n_digits)
    digits += text[i];
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
  const auto limit =
      static_cast<unsigned __int128>(std::numeric_limits<int64_t>::max()) + (r.negative ? 1u : 0u);
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
  const std::string valid =
      lo < -1000000000000LL ? "e.g. 1000 or 1e6" : "valid: " + range_text(lo, hi);
  if (s.empty()) throw Error(fmt::format("{} needs a number, got an empty value", opt));
  ExactInt e = exact_int(s);
  if (e.kind == ExactInt::kNotLiteral) {  // hex integers, inf, nan: read as a double
    const std::optional<double> v = strtod_whole(s);
    if (!v) throw_not_a_number(opt, s, valid);
    if (std::isinf(*v))
      e.kind = ExactInt::kTooLarge, e.negative = *v < 0;
    else if (std::isnan(*v) || *v != std::floor(*v))
      e.kind = ExactInt::kFraction;
    else if (std::fabs(*v) >= 0x1p63)
      e.kind = ExactInt::kTooLarge, e.negative = *v < 0;
    else
      e.kind = ExactInt::kValue, e.value = static_cast<int64_t>(*v);
  }
  if (e.kind == ExactInt::kFraction)
    throw Error(fmt::format("{} expects an integer, got '{}'", opt, s), valid);
  if (e.kind == ExactInt::kTooLarge || e.value < lo || e.value > hi)
    throw Error(fmt::format("{} = {} is out of range", opt, s), valid);
  return e.value;
}

std::vector<std::string> list_items(const std::string& opt, const std::string& s,
                                    const std::string& noun) {
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
void refuse_repeated_numbers(const std::string& opt, const std::vector<T>& v,
                             const std::vector<std::string>& text) {
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (v[j] == v[i])
        throw Error(
            fmt::format("{} lists the same value twice ('{}' and '{}')", opt, text[j], text[i]),
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
                hi < lo ? fmt::format("did you mean {},{}?", parts[1], parts[0])
                        : "give LO < HI, e.g. -20,8");
  return {lo, hi};
}

std::string parse_choice(const std::string& opt, const std::string& s,
                         const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  throw_unknown_choice(opt, s, choices);
}

}  // namespace fa4sim
