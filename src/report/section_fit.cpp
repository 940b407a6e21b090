// The `fit` section of `fa4sim report`: the fit table from data/fit/fit_table.json
// (scripts/datagen/fit_table.py). One fit takes minutes, so the report renders the committed runs
// instead of fitting.
#include <fmt/format.h>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/report/sections.h"
#include "fa4sim/util/json_input.h"

namespace fa4sim {

void report_fit(ReportContext& ctx) {
  const std::string path = roofline_data_dir() + "/fit/fit_table.json";
  std::string& md = ctx.markdown;
  md += "## fit: exp2 polynomials designed for the output format (data/fit/)\n\n";
  const json j = try_read_json_input(path).value_or(json());
  if (!j.is_object() || !j.contains("markdown")) {
    md += "No fit data in " + path +
          " (run `scripts/datagen/fit_table.py --fa4sim build/fa4sim`).\n\n";
    return;
  }
  const json& p = j.at("provenance");
  md += fmt::format(
      "`{}`, collected {} on {} ({} CPUs), git {}. Every score exhaustive (`fa4sim fit`, "
      "`fa4sim exp2 --exhaustive --coeffs`).\n",
      j.at("generator").get<std::string>(), p.at("collected").get<std::string>(),
      p.at("host").get<std::string>(), p.at("nproc").get<int>(), p.at("git").get<std::string>());
  md += j.at("markdown").get<std::string>() + "\n";
}

}  // namespace fa4sim
