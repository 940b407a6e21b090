// `fa4sim report --baseline`: compares a new report's results with a previous report's, field
// by field (Note [Report baseline]).
#include "fa4sim/report/baseline.h"

#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"

namespace fa4sim {

namespace {

// Note [Report baseline]: every JSON file of the new report's index is compared, field by
// field under `results`, with the file of the same name in the baseline folder. A number moves
// when it differs by more than 4 combined standard errors where the result states one (a sibling
// `<name>_stderr`), else 1e-9 relative (the analyses are deterministic); a string, boolean, null,
// list length or the set of fields moves when it differs. Exit 1 when anything moved
// (docs/commands/report.md).

std::string short_text(const json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

double as_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return NAN;
}

// A number moves when |now - was| exceeds its tolerance: 4 combined standard errors when the
// result states one (a sibling "<key>_stderr"), else 1e-9 relative (the analyses are
// deterministic: only a changed constant or algorithm moves them). Everything else must be equal.
void compare_json(const json& was, const json& now, const std::string& where,
                  const json* was_parent, const json* now_parent, const std::string& key,
                  std::vector<MovedResult>& moved) {
  if (was.is_number() && now.is_number()) {
    const double a = was.get<double>(), b = now.get<double>();
    double tol = 1e-9 * std::max(std::fabs(a), std::fabs(b));
    std::string tol_text = "1e-9 relative";
    const std::string se = key + "_stderr";
    if (was_parent && now_parent && was_parent->is_object() && was_parent->contains(se) &&
        now_parent->contains(se)) {
      const double sa = as_double((*was_parent)[se]), sb = as_double((*now_parent)[se]);
      tol = 4 * std::sqrt(sa * sa + sb * sb);
      tol_text = fmt::format("4 s.e. = {:.3g}", tol);
    }
    if (!(std::fabs(a - b) <= tol) && !(a == b))
      moved.push_back({where, short_text(was), short_text(now), tol_text});
    return;
  }
  if (was.type() != now.type()) {
    moved.push_back({where, short_text(was), short_text(now), "equal"});
    return;
  }
  if (was.is_object()) {
    for (auto it = was.begin(); it != was.end(); ++it) {
      if (!now.contains(it.key())) {
        moved.push_back({where + "." + it.key(), short_text(it.value()), "(missing)", "equal"});
        continue;
      }
      compare_json(it.value(), now[it.key()], where + "." + it.key(), &was, &now, it.key(), moved);
    }
    for (auto it = now.begin(); it != now.end(); ++it)
      if (!was.contains(it.key()))
        moved.push_back({where + "." + it.key(), "(missing)", short_text(it.value()), "equal"});
    return;
  }
  if (was.is_array()) {
    if (was.size() != now.size()) {
      moved.push_back({where, fmt::format("{} entries", was.size()),
                       fmt::format("{} entries", now.size()), "equal"});
      return;
    }
    for (size_t i = 0; i < was.size(); ++i)
      compare_json(was[i], now[i], fmt::format("{}[{}]", where, i), &was, &now, key, moved);
    return;
  }
  if (was != now) moved.push_back({where, short_text(was), short_text(now), "equal"});
}

// A report file of either folder, checked to be one: a JSON object of schema fa4sim/report-v1
// with an object `results` (Note [JSON input depth] for the nesting).
json read_report_json(const std::string& path) {
  const char* hint = "is --baseline a previous report's --out folder?";
  const std::optional<std::string> text = read_text_file(path);
  if (!text) throw Error(fmt::format("cannot read baseline file '{}'", path), hint);
  const json j = parse_json_input(*text, fmt::format("baseline file '{}' is not JSON", path), hint);
  const auto not_report = [&](const std::string& why) {
    return Error(fmt::format("baseline file '{}' is not a fa4sim report: {}", path, why), hint);
  };
  if (!j.is_object())
    throw not_report(fmt::format("it holds a JSON {}, not an object", j.type_name()));
  if (j.value("schema", json()) != "fa4sim/report-v1")
    throw not_report(
        fmt::format("its schema is {}, not \"fa4sim/report-v1\"",
                    j.contains("schema") ? j["schema"].dump() : std::string("missing")));
  if (!j.contains("results") || !j["results"].is_object())
    throw not_report("it has no 'results' object");
  return j;
}

}  // namespace

std::vector<MovedResult> compare_results(const json& was, const json& now,
                                         const std::string& where) {
  std::vector<MovedResult> moved;
  compare_json(was, now, where, nullptr, nullptr, "", moved);
  return moved;
}

size_t compare_with_baseline(const std::string& dir, const json& sections,
                             const std::string& out_dir, std::FILE* log) {
  size_t moved_total = 0, compared = 0;
  for (const auto& s : sections) {
    const std::string file = s["file"].get<std::string>();
    const std::filesystem::path base = std::filesystem::path(dir) / file;
    if (!std::filesystem::exists(base)) {
      std::fprintf(log, "fa4sim report: baseline has no %s: not compared\n", file.c_str());
      continue;
    }
    const json was = read_report_json(base.string());
    const json now = read_report_json((std::filesystem::path(out_dir) / file).string());
    const std::vector<MovedResult> moved = compare_results(was["results"], now["results"]);
    ++compared;
    for (const auto& m : moved)
      std::fprintf(log, "fa4sim report: %s %s moved: %s -> %s (tolerance %s)\n", file.c_str(),
                   m.where.c_str(), m.was.c_str(), m.now.c_str(), m.tolerance.c_str());
    moved_total += moved.size();
  }
  std::fprintf(
      log,
      "fa4sim report: compared %zu reports with %s: %zu results moved beyond their tolerance\n",
      compared, dir.c_str(), moved_total);
  return moved_total;
}

}  // namespace fa4sim
