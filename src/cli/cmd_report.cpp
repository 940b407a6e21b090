// `fa4sim report`: the main job. Runs the default analysis of every command, writes one JSON
// per analysis plus report.md that sets them against the published values.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/version.h"

namespace fa4sim::cli {

void ReportContext::write(const Report& r, const std::string& file, double elapsed_s) {
  const std::string path = (std::filesystem::path(out_dir) / file).string();
  write_output(path, [&](std::FILE* f) {
    const std::string text = envelope(r, elapsed_s).dump(2) + "\n";
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size())
      throw Error(fmt::format("cannot write '{}'", path), std::strerror(errno));
  }, "--out");
  index.push_back({{"command", r.command}, {"file", file}, {"elapsed_s", elapsed_s}});
}

namespace {
struct ReportOptions {
  std::string out = "fa4sim-report";
  std::string only;
  std::string baseline;
  CommonOptions common;
};

// ---- --baseline
// Note [Report baseline]: every JSON file of the new report's index is compared, field by field
// under `results`, with the file of the same name in the baseline folder. A number moves when it
// differs by more than 4 combined standard errors where the result states one (a sibling
// `<name>_stderr`), else 1e-9 relative (the analyses are deterministic); a string, boolean, null,
// list length or the set of fields moves when it differs. Exit 1 when anything moved
// (docs/commands/report.md).
struct Moved {
  std::string where;
  std::string was, now;
  std::string tolerance;
};

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
void compare_json(const json& was, const json& now, const std::string& where, const json* was_parent,
                  const json* now_parent, const std::string& key, std::vector<Moved>& moved) {
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
      moved.push_back({where, fmt::format("{} entries", was.size()), fmt::format("{} entries", now.size()), "equal"});
      return;
    }
    for (size_t i = 0; i < was.size(); ++i)
      compare_json(was[i], now[i], fmt::format("{}[{}]", where, i), &was, &now, key, moved);
    return;
  }
  if (was != now) moved.push_back({where, short_text(was), short_text(now), "equal"});
}

json read_report_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(fmt::format("cannot read baseline file '{}'", path), "is --baseline a previous report's --out folder?");
  try {
    return json::parse(f);
  } catch (const std::exception& e) {
    throw Error(fmt::format("baseline file '{}' is not JSON: {}", path, e.what()));
  }
}

// Returns the number of results that moved; prints them.
size_t compare_with_baseline(const std::string& dir, const json& sections, const std::string& out_dir) {
  size_t moved_total = 0, compared = 0;
  for (const auto& s : sections) {
    const std::string file = s["file"].get<std::string>();
    const std::filesystem::path base = std::filesystem::path(dir) / file;
    if (!std::filesystem::exists(base)) {
      std::fprintf(stderr, "fa4sim report: baseline has no %s: not compared\n", file.c_str());
      continue;
    }
    const json was = read_report_json(base.string());
    const json now = read_report_json((std::filesystem::path(out_dir) / file).string());
    std::vector<Moved> moved;
    compare_json(was.value("results", json::object()), now.value("results", json::object()), "results",
                 nullptr, nullptr, "", moved);
    ++compared;
    for (const auto& m : moved)
      std::fprintf(stderr, "fa4sim report: %s %s moved: %s -> %s (tolerance %s)\n", file.c_str(),
                   m.where.c_str(), m.was.c_str(), m.now.c_str(), m.tolerance.c_str());
    moved_total += moved.size();
  }
  std::fprintf(stderr, "fa4sim report: compared %zu reports with %s: %zu results moved beyond their tolerance\n",
               compared, dir.c_str(), moved_total);
  return moved_total;
}
}  // namespace

void add_report(CLI::App& root) {
  static ReportOptions o;
  std::vector<std::string> names;
  for (const auto& s : report_sections()) names.push_back(s.name);
  auto* sub = root.add_subcommand(
      "report", "The main job: run every default analysis, write JSON reports and report.md");
  sub->add_option("--out", o.out, "Output directory (created if missing)")
      ->type_name("DIR")
      ->check(non_empty_path())
      ->capture_default_str();
  sub->add_option("--only", o.only, fmt::format("Comma-separated sections to run, of: {} (default: all)", fmt::join(names, ", ")))
      ->type_name("SECTION[,SECTION...]");
  sub->add_option("--baseline", o.baseline,
                  "A previous report's --out folder: compare every result with it; exit 1 when one "
                  "moved beyond its tolerance (4 standard errors where the result states one, else "
                  "1e-9 relative)")
      ->type_name("DIR");
  add_common_options(sub, o.common);
  sub->footer("--json writes the index of what was written (index.json's content).\n"
              "Data files are read from FA4SIM_DATA_DIR when it is set (docs/install.md).");
  sub->callback([sub, names] {
    std::vector<std::string> wanted = names;
    if (sub->count("--only")) {
      if (o.only.empty())
        throw Error("--only needs at least one section", fmt::format("valid: {}", fmt::join(names, ", ")));
      wanted.clear();
      for (const auto& w : split(o.only, ',')) wanted.push_back(parse_choice("section", w, names));
    }
    if (sub->count("--baseline")) {
      if (o.baseline.empty() || !std::filesystem::is_directory(o.baseline))
        throw Error(fmt::format("--baseline '{}' is not a directory", o.baseline),
                    "give the --out folder of a previous fa4sim report");
      if (std::filesystem::exists(o.out) && std::filesystem::exists(o.baseline) &&
          std::filesystem::equivalent(o.out, o.baseline))
        throw Error("--baseline and --out are the same folder", "write the new report elsewhere");
    }
    check_report_path(o.common.json_path);
    if (const char* d = std::getenv("FA4SIM_DATA_DIR"); d && *d && !std::filesystem::is_directory(d))
      throw Error(fmt::format("FA4SIM_DATA_DIR '{}' is not a directory", d),
                  "point it at fa4sim's data folder (share/fa4sim/data when installed), or unset it");
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);
    if (ec || !std::filesystem::is_directory(o.out))
      throw Error(fmt::format("cannot create report directory '{}'", o.out),
                  ec ? ec.message() : std::string("a file of that name exists"));
    const std::string md_path = (std::filesystem::path(o.out) / "report.md").string();
    const std::string idx_path = (std::filesystem::path(o.out) / "index.json").string();
    check_output_path(md_path, "--out");

    Stopwatch total;
    ReportContext ctx;
    ctx.out_dir = o.out;
    ctx.threads = o.common.threads;
    ctx.markdown = fmt::format(
        "# fa4sim report\n\nGenerated by `fa4sim report --out {}` (fa4sim {}, git {}) on {} at "
        "{}.\nEvery number below is re-made by that command; the JSON files next to this one "
        "hold the full results and their provenance.\n\n",
        o.out, version(), git_describe(), host_name(), utc_now_iso8601());
    auto index = [&](const std::string& status, const std::string& error) {
      json idx = {{"schema", "fa4sim/report-index-v1"},
                  {"fa4sim_version", version()},
                  {"status", status},
                  {"sections_run", wanted},
                  {"sections", ctx.index},
                  {"provenance", provenance(o.common.threads, total.seconds())}};
      if (!error.empty()) idx["error"] = error;
      return idx;
    };
    try {
      for (const auto& s : report_sections()) {
        if (std::find(wanted.begin(), wanted.end(), s.name) == wanted.end()) continue;
        std::fprintf(stderr, "fa4sim report: running section '%s'...\n", s.name);
        Stopwatch sw;
        s.run(ctx);
        std::fprintf(stderr, "fa4sim report: section '%s' done in %.1f s\n", s.name, sw.seconds());
      }
    } catch (const std::exception& e) {
      // A failed report is complete and marked failed: report.md and index.json say so, and
      // the JSON files of the sections that finished stay (they are listed in the index).
      ctx.markdown += fmt::format("\n**FAILED**: {}\n", e.what());
      try {
        write_file_atomic(md_path, ctx.markdown);
        write_file_atomic(idx_path, index("failed", e.what()).dump(2) + "\n");
      } catch (const std::exception&) {
      }
      throw;
    }
    write_file_atomic(md_path, ctx.markdown);
    const json idx = index("complete", "");
    write_file_atomic(idx_path, idx.dump(2) + "\n");
    if (!o.common.json_path.empty()) write_file_atomic(o.common.json_path, idx.dump(2) + "\n");
    if (!is_stdout_target(o.common.json_path)) {
      std::printf("%s\n", ctx.markdown.c_str());
      std::printf("fa4sim report: wrote %s and %zu JSON reports in %.1f s\n", md_path.c_str(),
                  ctx.index.size(), total.seconds());
    }
    if (!o.baseline.empty() && compare_with_baseline(o.baseline, ctx.index, o.out) > 0)
      throw Error("results moved beyond their tolerance against the baseline",
                  "see the lines above; a moved published value may be an upstream change",
                  kExitCheckFailed);
  });
}

}  // namespace fa4sim::cli
