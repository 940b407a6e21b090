// `fa4sim report`: the main job. Parses the options and calls run_report_job()
// (include/fa4sim/report/report_job.h), then the --baseline gate (fa4sim/report/baseline.h).
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/report/baseline.h"
#include "fa4sim/report/report_job.h"
#include "fa4sim/util/error.h"

namespace fa4sim::cli {

namespace {
struct ReportOptions {
  std::string out = "fa4sim-report";
  std::string only;
  std::string baseline;
  CommonOptions common;
};
}  // namespace

void add_report(CLI::App& root) {
  static ReportOptions o;
  const std::vector<std::string> names = report_section_names();
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
    ReportJobOptions job;
    job.out_dir = o.out;
    job.threads = o.common.threads;
    job.sections = names;
    if (sub->count("--only")) {
      if (o.only.empty())
        throw Error("--only needs at least one section", fmt::format("valid: {}", fmt::join(names, ", ")));
      job.sections.clear();
      for (const auto& w : split(o.only, ',')) job.sections.push_back(parse_choice("section", w, names));
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
    const ReportJobResult res = run_report_job(job);
    if (!o.common.json_path.empty()) write_file_atomic(o.common.json_path, res.index.dump(2) + "\n");
    if (!is_stdout_target(o.common.json_path)) {
      std::printf("%s\n", res.markdown.c_str());
      std::printf("fa4sim report: wrote %s and %zu JSON reports in %.1f s\n", res.markdown_path.c_str(),
                  res.reports, res.elapsed_s);
    }
    if (!o.baseline.empty() && compare_with_baseline(o.baseline, res.index["sections"], o.out) > 0)
      throw Error("results moved beyond their tolerance against the baseline",
                  "see the lines above; a moved published value may be an upstream change",
                  kExitCheckFailed);
  });
}

}  // namespace fa4sim::cli
