// commands.h: the one subcommand table (ninja's kTools) and the report-section table.
//
// Adding a command: write src/cli/cmd_NAME.cpp with `void add_NAME(CLI::App& root)` (it creates
// the subcommand, its options and a callback), declare it here and add one row to kCommands in
// commands.cpp. Adding a section to `fa4sim report`: write `void report_NAME(ReportContext&)`
// next to the command and add one row to kReportSections.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fa4sim/util/report.h"

namespace fa4sim::cli {

struct CommandEntry {
  const char* name;
  void (*add)(CLI::App& root);
};

// What `fa4sim report` hands each section.
struct ReportContext {
  std::string out_dir;    // every section writes <out_dir>/<name>.json (and figures)
  int threads = 0;
  std::string markdown;   // sections append their part of report.md here
  json index = json::array();  // {section, file, elapsed_s} per written JSON
  // Writes `r` as <out_dir>/<file> atomically and records it in `index`.
  void write(const Report& r, const std::string& file, double elapsed_s);
};

struct ReportSection {
  const char* name;
  void (*run)(ReportContext& ctx);
};

const std::vector<CommandEntry>& commands();
const std::vector<ReportSection>& report_sections();

// ---- one line per command (defined in cmd_*.cpp)
void add_attention(CLI::App& root);
void add_check(CLI::App& root);
void add_exp2(CLI::App& root);
void add_fit(CLI::App& root);
void add_formats(CLI::App& root);
void add_gpu(CLI::App& root);
void add_gpu_attention(CLI::App& root);  // adds `attention` under `gpu`; called by add_gpu
void add_gpu_upstream(CLI::App& gpu);    // adds `upstream` under `gpu`; called by add_gpu
void add_quantize(CLI::App& root);
void add_report(CLI::App& root);
void add_rescale(CLI::App& root);
void add_roofline(CLI::App& root);
void add_version(CLI::App& root);

// ---- one line per report section
void report_gpu(ReportContext& ctx);
void report_attention(ReportContext& ctx);
void report_exp2(ReportContext& ctx);
void report_fit(ReportContext& ctx);
void report_formats(ReportContext& ctx);
void report_rescale(ReportContext& ctx);
void report_roofline(ReportContext& ctx);

}  // namespace fa4sim::cli
