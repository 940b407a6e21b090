// The published figures of `fa4sim report`, read from <data>/published/<name>.json
// (include/fa4sim/report/published.h).
#include "fa4sim/report/published.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/util/paths.h"

namespace fa4sim {

namespace {
constexpr const char* kSchema = "fa4sim/published-v1";
constexpr const char* kHint =
    "restore it from fa4sim's data/published, or point FA4SIM_DATA_DIR at fa4sim's data folder";
}  // namespace

PublishedValues PublishedValues::load(const std::string& name) {
  const std::string path = data_dir() + "/published/" + name + ".json";
  std::error_code ec;
  const std::optional<std::string> text =
      std::filesystem::is_directory(path, ec) ? std::nullopt : read_text_file(path);
  if (!text) throw Error(fmt::format("cannot read the published figures '{}'", path), kHint);
  return parse(
      parse_json_input(*text, fmt::format("the published figures '{}' are not JSON", path), kHint),
      path);
}

PublishedValues PublishedValues::parse(const json& j, const std::string& path) {
  auto bad = [&](const std::string& what) -> Error {
    return Error(fmt::format("the published figures '{}' are malformed: {}", path, what), kHint);
  };
  if (!j.is_object() || j.value("schema", json()) != kSchema)
    throw bad(fmt::format("'schema' must be \"{}\"", kSchema));
  if (!j.contains("values") || !j["values"].is_object() || j["values"].empty())
    throw bad("'values' must be a non-empty object");
  for (auto it = j["values"].begin(); it != j["values"].end(); ++it) {
    const json& e = it.value();
    const std::string where = fmt::format("values.\"{}\"", it.key());
    if (!e.is_object()) throw bad(where + " must be an object");
    if (!e.contains("value") || !(e["value"].is_number() || e["value"].is_null()))
      throw bad(where + ".value must be a number (or null where nothing was published)");
    if (e["value"].is_null() && !(e.contains("text") && e["text"].is_string()))
      throw bad(where + " has no value: it needs a 'text'");
    if (e.contains("text") && !e["text"].is_string()) throw bad(where + ".text must be a string");
    if (!e.contains("source") || !e["source"].is_string() || e["source"].get<std::string>().empty())
      throw bad(where + ".source must say where the number was published");
  }
  PublishedValues p;
  p.path_ = path;
  p.values_ = j["values"];
  return p;
}

const json& PublishedValues::entry(const std::string& key) const {
  if (!values_.contains(key)) fail(key, "is missing");
  return values_[key];
}

double PublishedValues::value(const std::string& key) const {
  const json& e = entry(key);
  if (!e["value"].is_number()) fail(key, "has no number");
  return e["value"].get<double>();
}

std::string PublishedValues::text(const std::string& key) const {
  const json& e = entry(key);
  if (e.contains("text")) return e["text"].get<std::string>();
  return compact_number(e["value"].get<double>());
}

const std::string& PublishedValues::source(const std::string& key) const {
  return entry(key)["source"].get_ref<const std::string&>();
}

void PublishedValues::fail(const std::string& key, const std::string& what) const {
  throw Error(
      fmt::format("the published figures '{}' are malformed: values.\"{}\" {}", path_, key, what),
      kHint);
}

std::string compact_number(double v) {
  std::string s = fmt::format("{}", v);  // shortest round trip: "1.44e-07"
  const auto e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mant = s.substr(0, e), exp = s.substr(e + 1);
  std::string sign;
  if (!exp.empty() && (exp[0] == '-' || exp[0] == '+')) {
    if (exp[0] == '-') sign = "-";
    exp.erase(0, 1);
  }
  while (exp.size() > 1 && exp[0] == '0') exp.erase(0, 1);
  return mant + "e" + sign + exp;
}

}  // namespace fa4sim
