// run_report_job(): report.md leads with the findings; a missing or malformed published-figures
// file fails the report before any section runs, marked failed, with no section's JSON written.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli_helpers.h"
#include "fa4sim/report/report_job.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/paths.h"

using namespace fa4sim;
namespace fs = std::filesystem;
using fa4sim::test::slurp;

namespace {

// A data folder holding only data/published, with `edit` applied to it.
fs::path published_only(const fs::path& dir, const std::string& source_data) {
  fs::create_directories(dir / "data");
  fs::copy(source_data + "/published", dir / "data" / "published", fs::copy_options::recursive);
  return dir / "data";
}

}  // namespace

TEST(ReportJob, FindingsComeRightAfterTheHeader) {
  const fs::path dir = fa4sim::test::temp_dir("report-job");
  ReportJobOptions o;
  o.out_dir = (dir / "r").string();
  o.sections = {"formats"};
  o.threads = 1;
  std::FILE* log = std::tmpfile();
  const ReportJobResult res = run_report_job(o, log);
  std::fclose(log);
  const std::string md = slurp(res.markdown_path);
  EXPECT_EQ(md, res.markdown);
  const auto findings = md.find("**Findings");
  const auto first_section = md.find("\n## ");
  ASSERT_NE(findings, std::string::npos) << md;
  EXPECT_LT(findings, first_section);
  EXPECT_NE(md.find("| finding | fa4sim | published | pass |"), std::string::npos);
  EXPECT_NE(md.find("| e4m3 max finite | 448 | 448 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("- formats: the published limits state no tolerance"), std::string::npos) << md;
  EXPECT_EQ(res.index["status"], "complete");
  fs::remove_all(dir);
}

TEST(ReportJob, BadPublishedFileFailsBeforeAnySectionRuns) {
  const fs::path dir = fa4sim::test::temp_dir("report-job");
  const fs::path data = published_only(dir, data_dir());
  fs::remove(data / "published" / "exp2.json");
  std::ofstream(data / "published" / "formats.json", std::ios::trunc)
      << "{\"schema\": \"fa4sim/published-v1\", \"values\": 3}";
  ::setenv("FA4SIM_DATA_DIR", data.c_str(), 1);
  ReportJobOptions o;
  o.out_dir = (dir / "r").string();
  o.sections = {"formats", "exp2"};
  std::string message;
  try {
    run_report_job(o, std::tmpfile());
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  ::unsetenv("FA4SIM_DATA_DIR");
  // Both problems named at once.
  EXPECT_NE(message.find("formats.json' are malformed: 'values' must be a non-empty object"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("cannot read the published figures '" +
                         (data / "published" / "exp2.json").string()),
            std::string::npos)
      << message;
  // Marked failed, and nothing of the sections: formats ran first in the old order, not now.
  const json idx = json::parse(slurp((dir / "r" / "index.json").string()));
  EXPECT_EQ(idx["status"], "failed");
  EXPECT_TRUE(idx["sections"].empty());
  EXPECT_NE(slurp((dir / "r" / "report.md").string()).find("**FAILED**: 2 data files: "),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "r" / "formats.json"));
  fs::remove_all(dir);
}
