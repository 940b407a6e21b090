// `fa4sim formats`: the table of every number format's parameters and derived limits. The
// analysis is in src/analysis/formats_report.cpp; the report's section in src/report/section_formats.cpp.
#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/formats_report.h"

namespace fa4sim::cli {

void add_formats(CLI::App& root) {
  static CommonOptions c;
  auto* sub = root.add_subcommand(
      "formats",
      "Table of the number formats (fp32, bf16, fp16, e4m3, e5m2): bits, bias, limits, "
      "log2(max finite)");
  add_common_options(sub, c);
  sub->callback([] {
    Stopwatch sw;
    check_report_path(c.json_path);
    Report r = formats_table_report();
    r.threads = 1;
    emit(r, c.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
