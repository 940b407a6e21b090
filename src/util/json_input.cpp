// json_input.cpp: the one reader of JSON input files (see json_input.h).
#include "fa4sim/util/json_input.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

size_t json_nesting_depth(const std::string& text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

json parse_json_input(const std::string& text, const std::string& not_json,
                      const std::string& hint) {
  // Refused before parsing (Note [JSON input depth]).
  if (json_nesting_depth(text) > kMaxJsonDepth)
    throw Error(fmt::format("{}: nested deeper than {} levels", not_json, kMaxJsonDepth),
                hint.empty() ? "fa4sim's own JSON files nest fewer than 10 levels" : hint);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: {}", not_json, e.what()),
                hint.empty() ? "fix the syntax (e.g. with python3 -m json.tool)" : hint);
  }
}

std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return std::nullopt;
  return ss.str();
}

json read_json_input(const std::string& path, const std::string& what, const std::string& hint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(fmt::format("{} '{}' does not exist", what, path),
                hint.empty() ? "check the path" : hint);
  if (fs::is_directory(path, ec))
    throw Error(fmt::format("{} '{}' is a directory", what, path),
                hint.empty() ? "give a .json file" : hint);
  const std::optional<std::string> text = read_text_file(path);
  if (!text)
    throw Error(fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)),
                hint.empty() ? "check permissions" : hint);
  return parse_json_input(*text, fmt::format("{} '{}' is not valid JSON", what, path), hint);
}

std::optional<json> try_read_json_input(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;
  const std::optional<std::string> text = read_text_file(path);
  if (!text) return std::nullopt;
  try {
    return parse_json_input(*text, path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace fa4sim
