// `fa4sim report`: --only, --json (the index), --baseline (exit 1 when a result moved), a failed
// report marked failed, and the report JSON conventions every command shares (non-finite numbers
// as text, timings in provenance so that identical runs have identical results).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"

namespace fs = std::filesystem;
using fa4sim::test::run_cli;
using fa4sim::test::slurp;
using fa4sim::test::temp_dir;
using json = nlohmann::ordered_json;

TEST(CliReport, OnlyListsSectionsAndRefusesEmpty) {
  auto h = run_cli("report --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("formats, exp2, fit, rescale, roofline, schedule, attention, gpu"),
            std::string::npos)
      << h.out;
  const auto dir = temp_dir("report");
  auto r = run_cli("report --only '' --out " + (dir / "r").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--only needs at least one section"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "r")) << "nothing written";
  fs::remove_all(dir);
}

TEST(CliReport, JsonIsTheIndexAndBaselineGates) {
  const auto dir = temp_dir("report");
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  auto r = run_cli("report --only formats --out " + a + " --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const json idx = json::parse(r.out);  // stdout holds the index alone
  EXPECT_EQ(idx["schema"], "fa4sim/report-index-v1");
  EXPECT_EQ(idx["status"], "complete");
  EXPECT_EQ(idx["sections"][0]["file"], "formats.json");
  EXPECT_EQ(json::parse(slurp(a + "/index.json"))["sections"], idx["sections"]);
  // Same code, same results: exit 0.
  auto same = run_cli("report --only formats --out " + b + " --baseline " + a);
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.err.find("0 results moved"), std::string::npos) << same.err;
  // A baseline whose e4m3 max differs (as if upstream changed a constant): exit 1, named.
  json f = json::parse(slurp(a + "/formats.json"));
  f["results"]["formats"][3]["max_finite"] = 240.0;
  std::ofstream(a + "/formats.json") << f.dump(2);
  auto moved = run_cli("report --only formats --out " + b + " --baseline " + a);
  EXPECT_EQ(moved.code, 1) << moved.err;
  EXPECT_NE(moved.err.find("formats.json results.formats[3].max_finite moved: 240.0 -> 448.0"),
            std::string::npos)
      << moved.err;
  auto missing =
      run_cli("report --only formats --out " + b + " --baseline " + (dir / "nope").string());
  EXPECT_EQ(missing.code, 2);
  fs::remove_all(dir);
}

TEST(CliReport, FailedReportIsMarkedFailed) {
  const auto dir = temp_dir("report");
  // A data folder that exists but holds no architectures: formats runs, roofline fails.
  fs::create_directory(dir / "emptydata");
  const std::string cmd = "env FA4SIM_DATA_DIR=" + (dir / "emptydata").string() + " " +
                          std::string(FA4SIM_BIN) + " report --only formats,roofline --out " +
                          (dir / "failed").string() + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const json idx = json::parse(slurp((dir / "failed" / "index.json").string()));
  EXPECT_EQ(idx["status"], "failed");
  EXPECT_NE(idx["error"].get<std::string>().find("no architecture files"), std::string::npos)
      << idx;
  EXPECT_NE(slurp((dir / "failed" / "report.md").string()).find("**FAILED**"), std::string::npos);
  // A data folder that does not exist: refused before anything is written.
  const std::string cmd2 = "env FA4SIM_DATA_DIR=/nonexistent-fa4sim " + std::string(FA4SIM_BIN) +
                           " report --only formats --out " + (dir / "none").string() +
                           " >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd2.c_str())), 2);
  EXPECT_FALSE(fs::exists(dir / "none"));
  fs::remove_all(dir);
}

// A missing or malformed data/published file: "fa4sim: error: <what> (<hint>)", exit 2, before
// any section ran (the report is marked failed and holds no section's JSON).
TEST(CliReport, BadPublishedFiguresAreAnError) {
  const auto dir = temp_dir("report");
  fs::create_directories(dir / "data" / "published");
  std::ofstream(dir / "data" / "published" / "formats.json") << "[1, 2";
  const std::string env = "env FA4SIM_DATA_DIR=" + (dir / "data").string() + " ";
  const std::string out = (dir / "r").string();
  const std::string cmd = env + FA4SIM_BIN + " report --only formats --out " + out +
                          " >/dev/null 2>" + (dir / "err").string();
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  const std::string err = slurp((dir / "err").string());
  EXPECT_NE(err.find("fa4sim: error: the published figures '" +
                     (dir / "data" / "published" / "formats.json").string() + "' are not JSON"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("(restore it from fa4sim's data/published"), std::string::npos) << err;
  EXPECT_EQ(json::parse(slurp(out + "/index.json"))["status"], "failed");
  EXPECT_FALSE(fs::exists(out + "/formats.json"));
  fs::remove(dir / "data" / "published" / "formats.json");
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  EXPECT_NE(slurp((dir / "err").string()).find("fa4sim: error: cannot read the published figures"),
            std::string::npos);
  fs::remove_all(dir);
}

// One encoding of non-finite numbers in every report: "nan", "inf", "-inf" (null lost inf vs nan).
TEST(CliReportJson, NonFiniteNumbersAreText) {
  auto q = run_cli("quantize --dtype e4m3 --json - nan 0");
  ASSERT_EQ(q.code, 0) << q.err;
  EXPECT_EQ(json::parse(q.out)["results"]["values"][0]["decoded"], "nan");
}

// results hold results only: two identical runs give byte-identical results (timings are in
// provenance).
TEST(CliReportJson, IdenticalRunsHaveIdenticalResults) {
  const std::string args =
      "attention --batch 1 --heads 2 --kv-heads 1 --d 16 --seq 64 --threads 2 --json -";
  auto a = run_cli(args), b = run_cli(args);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const json ja = json::parse(a.out), jb = json::parse(b.out);
  EXPECT_EQ(ja["results"].dump(), jb["results"].dump());
  EXPECT_TRUE(ja["provenance"].contains("perf"));
  EXPECT_TRUE(ja["provenance"].contains("run_elapsed_s"));
}

// A baseline that is not a fa4sim report is refused with exit 2 and the file's name, whatever it
// holds: 150,000 nested arrays under "results" (which overflowed the stack while it was copied),
// valid JSON that is not an object, another schema, an empty object.
TEST(CliReport, BaselineThatIsNotAReportIsRefused) {
  const auto dir = temp_dir("report");
  const std::string base = (dir / "base").string(), now = (dir / "now").string();
  ASSERT_EQ(run_cli("report --only formats --out " + base).code, 0);
  const std::string deep = std::string(150000, '[') + std::string(150000, ']');
  const std::pair<std::string, std::string> cases[] = {
      {"{\"results\": {\"x\": " + deep + "}}", "nested deeper than 256 levels"},
      {"[]", "is not a fa4sim report"},
      {"null", "is not a fa4sim report"},
      {"{\"schema\": \"fa4sim/report-v0\", \"results\": {}}", "is not a fa4sim report"},
      {"{}", "is not a fa4sim report"}};
  for (const auto& [text, needle] : cases) {
    std::ofstream(base + "/formats.json") << text;
    auto r = run_cli("report --only formats --out " + now + " --baseline " + base);
    EXPECT_EQ(r.code, 2) << text.substr(0, 60) << "\n" << r.err;
    EXPECT_NE(r.err.find("fa4sim: error: baseline file '" + base + "/formats.json'"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("this is a bug"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

// A symlink inside --out that points outside it is replaced by the report's file; the file it
// pointed to is left as it was.
TEST(CliReport, OutNeverWritesThroughALinkToOutside) {
  const auto dir = temp_dir("report");
  const fs::path out = dir / "o", precious = dir / "precious.md";
  fs::create_directory(out);
  std::ofstream(precious) << "PRECIOUS\n";
  for (const char* name : {"report.md", "index.json", "formats.json"})
    fs::create_symlink(precious, out / name);
  auto r = run_cli("report --only formats --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(precious.string()), "PRECIOUS\n");
  for (const char* name : {"report.md", "index.json", "formats.json"}) {
    EXPECT_FALSE(fs::is_symlink(out / name)) << name;
    EXPECT_TRUE(fs::is_regular_file(out / name)) << name;
  }
  EXPECT_EQ(slurp((out / "report.md").string()).rfind("# fa4sim report", 0), 0u);
  // The figures plot.py draws into the folder, when it runs, do not follow links either.
  fs::create_symlink(precious, out / "roofline_pipe_model.png");
  auto fig = run_cli("report --only roofline --out " + out.string());
  ASSERT_EQ(fig.code, 0) << fig.err;
  EXPECT_EQ(slurp(precious.string()), "PRECIOUS\n");
  EXPECT_FALSE(fs::is_symlink(out / "roofline_pipe_model.png"));
  fs::remove_all(dir);
}

// --out names a folder: "-" (stdout for --json) is refused instead of creating a folder "-".
TEST(CliReport, OutDashIsRefused) {
  const auto dir = temp_dir("report");
  const std::string cmd = "cd " + dir.string() + " && " + FA4SIM_BIN +
                          " report --only formats --out - >/dev/null 2>err";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  EXPECT_NE(slurp((dir / "err").string()).find("--out needs a folder"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "-"));
  fs::remove_all(dir);
}

// report.md's "Generated by" line is the command that re-makes it, --only included; --json to a
// file inside an --out folder that does not exist yet works (the folder is made first).
TEST(CliReport, GeneratedByLineIsTheWholeCommand) {
  const auto dir = temp_dir("report");
  const std::string out = (dir / "new").string();
  auto r = run_cli("report --only formats --out " + out + " --json " + out + "/idx.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp(out + "/report.md");
  EXPECT_NE(md.find("Generated by `fa4sim report --out " + out + " --only formats`"),
            std::string::npos)
      << md.substr(0, 300);
  EXPECT_TRUE(fs::exists(out + "/idx.json"));
  fs::remove_all(dir);
}
