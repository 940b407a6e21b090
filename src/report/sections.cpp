// The sections of `fa4sim report` (include/fa4sim/report/sections.h).
#include "fa4sim/report/sections.h"

namespace fa4sim {

// Order = order of the sections in report.md.
const std::vector<ReportSection>& report_sections() {
  static const std::vector<ReportSection> kReportSections = {
      {"formats", report_formats, {"formats"}, nullptr},
      {"exp2", report_exp2, {"exp2"}, nullptr},
      {"fit", report_fit, {}, nullptr},
      {"rescale", report_rescale, {"rescale"}, nullptr},
      {"roofline", report_roofline, {"roofline"}, check_roofline_data},
      {"schedule", report_schedule, {}, check_schedule_data},
      {"attention",
       report_attention,
       {"rescale"},
       nullptr},  // the seed article's P-only FP8 figures
      {"gpu", report_gpu, {}, nullptr},
  };
  return kReportSections;
}

}  // namespace fa4sim
