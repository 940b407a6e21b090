// sections.h: the sections of `fa4sim report`, in the order of report.md. Each runs the default
// analysis of one command, writes its JSON reports through the context, appends its part of
// report.md and reports its findings (src/report/section_<name>.cpp).
//
// Adding a section: write src/report/section_NAME.cpp with `void report_NAME(ReportContext&)`,
// declare it here and add one row to report_sections() (src/report/sections.cpp), naming the
// data/published files it reads.
#pragma once

#include <string>
#include <vector>

#include "fa4sim/report/context.h"

namespace fa4sim {

struct ReportSection {
  const char* name;
  void (*run)(ReportContext& ctx);
  std::vector<const char*> published;  // data/published/<name>.json files it reads
  // Reads the other data files the section needs and throws Error when one is missing, so that
  // a report fails before any section runs (nullptr: nothing to check).
  void (*check_data)() = nullptr;
};

const std::vector<ReportSection>& report_sections();

void report_attention(ReportContext& ctx);
void report_exp2(ReportContext& ctx);
void report_fit(ReportContext& ctx);
void report_formats(ReportContext& ctx);
void report_gpu(ReportContext& ctx);
void report_rescale(ReportContext& ctx);
void report_roofline(ReportContext& ctx);
void report_schedule(ReportContext& ctx);
// Reads data/schedule/eval_*.json and the kernel descriptions: Error when one is missing or malformed.
void check_schedule_data();

// ---- the roofline section's parts (section_roofline.cpp)
// scripts/drivers/plot.py run on `json_path` into `out_dir` with a python3 that has matplotlib:
// the one on PATH, else Debian's. The run itself finds out (plot.py --if-matplotlib exits
// kPlotNoMatplotlib, quietly, without matplotlib): one Python start per figure set where a
// separate `import matplotlib` probe made two. `cmd` is the command line of the run that drew or
// failed, without --if-matplotlib (what a user would type); empty when no python3 had matplotlib.
inline constexpr int kPlotNoMatplotlib = 3;
struct PlotRun {
  enum Outcome { drawn, failed, no_matplotlib } outcome;
  std::string cmd;
};
PlotRun draw_with_matplotlib(const std::string& json_path, const std::string& out_dir);
struct ArchSpec;
// Loads every data/archs file: Error when there is none or one is malformed.
void check_roofline_data();
// Each published tile figure of `pub` (data/published/roofline.json) and each schedule fraction of
// data/fa4_tuning.json next to the model's, matched within 1e-9 relative; appended to `r`'s tables
// and results ("published"). With `ctx`, the figures marked "finding" and the count of matches
// become findings.
void add_published_comparison(Report& r, const std::vector<ArchSpec>& archs,
                              const PublishedValues& pub, ReportContext* ctx = nullptr);

}  // namespace fa4sim
