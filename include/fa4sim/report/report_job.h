// report_job.h: `fa4sim report`, the main job, as one library call. It runs the default analysis
// of every chosen section and writes into one folder: one JSON report per analysis, report.md
// (the findings first, then every section with each number next to its published value) and
// index.json (what was written). docs/commands/report.md documents the output.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "fa4sim/util/report.h"

namespace fa4sim {

struct ReportJobOptions {
  std::string out_dir = "fa4sim-report";
  std::vector<std::string> sections;  // names from report_section_names(); run in table order
  int threads = 0;                    // 0 = all cores
};

struct ReportJobResult {
  std::string markdown;       // report.md's content
  json index;                 // index.json's content
  std::string markdown_path;  // <out_dir>/report.md
  size_t reports = 0;         // JSON reports written
  double elapsed_s = 0;
};

// The section names, in report order.
std::vector<std::string> report_section_names();

// Runs the job; progress goes to `log`. The data files of every chosen section (the published
// figures, data/archs) are read first. On any failure, that one included, report.md and
// index.json mark the report failed (index "status": "failed" with an "error"; the JSON files of
// the sections that finished stay, listed) and the Error is rethrown: a report is complete or
// marked failed, never silently partial.
ReportJobResult run_report_job(const ReportJobOptions& o, std::FILE* log = stderr);

}  // namespace fa4sim
