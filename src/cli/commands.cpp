#include "commands.h"

namespace fa4sim::cli {

const std::vector<CommandEntry>& commands() {
  static const std::vector<CommandEntry> kCommands = {
      {"report", add_report},
      {"version", add_version},
  };
  return kCommands;
}

// Order = order of the sections in report.md.
const std::vector<ReportSection>& report_sections() {
  static const std::vector<ReportSection> kReportSections = {
  };
  return kReportSections;
}

}  // namespace fa4sim::cli
