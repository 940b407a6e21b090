// report module: table rendering, the JSON envelope, atomic writes.
#include "fa4sim/util/report.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cli_helpers.h"
#include "fa4sim/util/error.h"

using namespace fa4sim;

TEST(Report, TextTableAlignsColumns) {
  Table t{"T", {"name", "value"}, {{"a", "1.5"}, {"longer", "22.25"}}, {"note"}};
  const std::string s = render_text(t);
  EXPECT_NE(s.find(" name    value\n"), std::string::npos) << s;
  EXPECT_NE(s.find(" a         1.5\n"), std::string::npos) << s;  // numbers right-aligned
  EXPECT_NE(s.find(" longer  22.25\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  note\n"), std::string::npos) << s;
}

TEST(Report, MarkdownTable) {
  Table t{"", {"a", "b"}, {{"x", "1"}}, {}};
  EXPECT_EQ(render_markdown(t), "| a | b |\n|---|---:|\n| x | 1 |\n");
}

TEST(Report, EnvelopeHasSchemaAndProvenance) {
  Report r;
  r.command = "demo";
  r.params = {{"k", 1}};
  r.results = {{"v", 2}};
  r.threads = 3;
  const json j = envelope(r, 0.5);
  EXPECT_EQ(j["schema"], "fa4sim/report-v1");
  EXPECT_EQ(j["command"], "demo");
  EXPECT_EQ(j["params"]["k"], 1);
  EXPECT_EQ(j["results"]["v"], 2);
  EXPECT_EQ(j["provenance"]["threads"], 3);
  EXPECT_DOUBLE_EQ(j["provenance"]["elapsed_s"].get<double>(), 0.5);
  EXPECT_FALSE(j["provenance"]["git"].get<std::string>().empty());
  EXPECT_EQ(j["provenance"]["date"].get<std::string>().size(), 20u);  // 2026-01-01T00:00:00Z
  // Key order is the documented envelope order.
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "command", "fa4sim_version", "params",
                                            "results", "provenance"}));
}

TEST(Report, AtomicWriteLeavesNoTempFile) {
  auto dir = test::temp_dir("atomic");
  const std::string path = (dir / "r.json").string();
  write_file_atomic(path, "{}\n");
  EXPECT_EQ(test::slurp(path), "{}\n");
  write_file_atomic(path, "{\"a\":1}\n");  // replaces
  EXPECT_EQ(test::slurp(path), "{\"a\":1}\n");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(Report, MissingDirectoryIsAnErrorAndWritesNothing) {
  auto dir = test::temp_dir("missing");
  const std::string path = (dir / "nope" / "r.json").string();
  EXPECT_THROW(check_report_path(path), Error);
  try {
    write_file_atomic(path, "{}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "nope"));
  std::filesystem::remove_all(dir);
}

TEST(Report, StdoutAndEmptyPathsAlwaysPass) {
  EXPECT_NO_THROW(check_report_path("-"));
  EXPECT_NO_THROW(check_report_path(""));
}

// Non-finite numbers are written as "nan", "inf", "-inf" in every report (nlohmann writes null,
// which loses inf vs nan); params too; finite numbers and real nulls are untouched.
TEST(Report, NonFiniteNumbersAreText) {
  Report r;
  r.command = "t";
  r.params = {{"x", -INFINITY}, {"absent", nullptr}};
  r.results = {
      {"a", NAN}, {"b", INFINITY}, {"list", {1.5, -INFINITY, 2}}, {"nested", {{"c", NAN}}}};
  const json j = envelope(r, 0.0);
  EXPECT_EQ(j["results"]["a"], "nan");
  EXPECT_EQ(j["results"]["b"], "inf");
  EXPECT_EQ(j["results"]["list"], json({1.5, "-inf", 2}));
  EXPECT_EQ(j["results"]["nested"]["c"], "nan");
  EXPECT_EQ(j["params"]["x"], "-inf");
  EXPECT_TRUE(j["params"]["absent"].is_null());
}

// Timings go to provenance, merged with the envelope's own.
TEST(Report, TimingsGoToProvenance) {
  Report r;
  r.command = "t";
  r.results = {{"n", 3}};
  r.timings = {{"perf", {{"elapsed_s", 0.25}}}};
  const json j = envelope(r, 0.5);
  EXPECT_EQ(j["results"], json({{"n", 3}}));
  EXPECT_EQ(j["provenance"]["perf"]["elapsed_s"], 0.25);
  EXPECT_EQ(j["provenance"]["elapsed_s"], 0.5);
}
