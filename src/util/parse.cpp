// parse.cpp: splitting and whole-string numbers for option values (see parse.h).
#include "fa4sim/util/parse.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

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
    if (c < 0x20 || c > 0x7e) out += fmt::format("\\x{:02x}", c);
    else out += ch;
  }
  return out;
}

double parse_finite(const std::string& what, const std::string& s) {
  const std::optional<double> v = strtod_whole(s);
  if (!v || !std::isfinite(*v))
    throw Error(fmt::format("{}: expected a finite number, got '{}'", what, s));
  return *v;
}

}  // namespace fa4sim
