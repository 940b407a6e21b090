// context.h: what `fa4sim report` hands each section, and what a section hands back: its JSON
// reports, its part of report.md and its findings (the summary table at the top of report.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fa4sim/report/published.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

// One row of report.md's summary table.
struct Finding {
  std::string what;       // the finding, short
  std::string fa4sim;     // fa4sim's number, as the section prints it
  std::string published;  // the published number, "-" when there is none
  // Within the tolerance the section compares with; nullopt where the section states none
  // (the table shows "-" and the finding's note says what the comparison is).
  std::optional<bool> pass;
  std::string note;  // printed once under the table, e.g. why there is no pass/fail
};

class ReportContext {
 public:
  ReportContext(std::string out_dir, int threads) : out_dir(std::move(out_dir)), threads(threads) {}

  std::string out_dir;  // every section writes <out_dir>/<name>.json (and figures)
  int threads = 0;
  std::string markdown;        // sections append their part of report.md here
  json index = json::array();  // {command, file, elapsed_s} per written JSON
  std::vector<Finding> findings;

  // Writes `r` as <out_dir>/<file> atomically and records it in `index`.
  void write(const Report& r, const std::string& file, double elapsed_s);
  // <out_dir>/<file>, to be written: every file inside the report folder is fa4sim's own, so a
  // symlink there is removed first and never followed out of the folder.
  std::string own_path(const std::string& file) const;
  void add_finding(Finding f) { findings.push_back(std::move(f)); }

  // The published figures of data/published/<name>.json, loaded by load_published() before any
  // section runs; Error when `name` was not loaded.
  const PublishedValues& published(const std::string& name) const;
  void load_published(const std::string& name);

  // report.md's summary table (one row per finding, their notes under it).
  std::string findings_markdown() const;

 private:
  std::map<std::string, PublishedValues> published_;
};

}  // namespace fa4sim
