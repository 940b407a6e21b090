// The CLI shell: subcommand table, did-you-mean, --version, --help, exit codes.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"

using fa4sim::test::run_cli;

TEST(CliMain, UnknownSubcommandIsUsageErrorWithSuggestion) {
  auto r = run_cli("reprot");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error: unknown command 'reprot'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'report'"), std::string::npos) << r.err;
}

TEST(CliMain, UnknownSubcommandFarFromAnyListsCommands) {
  auto r = run_cli("zzzzzzzzzz");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("commands:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(CliMain, NoSubcommandPrintsUsage) {
  auto r = run_cli("");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error: give a command"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Subcommands:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("report"), std::string::npos) << r.out;
}

TEST(CliMain, HelpCommandAndShortVersion) {
  auto a = run_cli("help rescale"), b = run_cli("rescale --help");
  EXPECT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out.find("--softmax-scale"), std::string::npos);
  auto g = run_cli("help gpu attention");
  EXPECT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out, run_cli("gpu attention --help").out);
  EXPECT_EQ(run_cli("help").code, 0);
  EXPECT_EQ(run_cli("help nosuch").code, 2);
  auto v = run_cli("-V");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out, run_cli("--version").out);
}

// One spelling per idea: head dim --d, key-tile order --order, keys per tile --block-n, softmax
// scale --softmax-scale, in every command's --help; the old spellings are hidden aliases that
// still parse; --help types every number (no TEXT).
TEST(CliMain, OneSpellingPerIdea) {
  for (const char* cmd : {"attention", "rescale", "gpu attention", "gpu upstream check", "roofline"}) {
    const auto h = run_cli(std::string(cmd) + " --help");
    ASSERT_EQ(h.code, 0) << cmd;
    for (const char* old : {"--head-dim", "--block-order", "--block ", "--scale "})
      EXPECT_EQ(h.out.find(old), std::string::npos) << cmd << " shows " << old << ":\n" << h.out;
    EXPECT_EQ(h.out.find("TEXT"), std::string::npos) << cmd << ":\n" << h.out;
  }
  EXPECT_NE(run_cli("gpu attention --help").out.find("--d D"), std::string::npos);
  EXPECT_NE(run_cli("rescale --help").out.find("--block-n N"), std::string::npos);
  // The hidden aliases parse into the same option.
  auto a = run_cli("rescale --rows 8 --keys 256 --d 8 --block 128 --scale 0.125 --json -");
  auto b = run_cli("rescale --rows 8 --keys 256 --d 8 --block-n 128 --softmax-scale 0.125 --json -");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["results"], nlohmann::json::parse(b.out)["results"]);
}

TEST(CliMain, VersionFlagAndCommandAgree) {
  auto a = run_cli("--version");
  auto b = run_cli("version");
  EXPECT_EQ(a.code, 0);
  EXPECT_EQ(b.code, 0);
  EXPECT_NE(a.out.find("fa4sim "), std::string::npos);
  EXPECT_EQ(a.out, b.out);
}

TEST(CliMain, EverySubcommandHasHelp) {
  auto top = run_cli("--help");
  ASSERT_EQ(top.code, 0);
  for (const char* cmd : {"exp2", "report", "version"}) {
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
    auto r = run_cli(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << ": " << r.out;
  }
}

TEST(CliMain, UnknownOptionIsUsageError) {
  auto r = run_cli("report --no-such-option");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fa4sim report --help"), std::string::npos) << r.err;
}

TEST(CliMain, ReportUnknownSectionSuggests) {
  auto dir = fa4sim::test::temp_dir("rep");
  auto r = run_cli("report --out " + dir.string() + " --only reprt");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown section 'reprt'"), std::string::npos) << r.err;
}

// Messages that name the right thing (each used to point elsewhere: "not expected: e4m3
// --dtype", "valid: -4611686018427387904..", "(e.g. 8 or -20.5)" for a list, "out of memory"
// for a folder, "pass another --json path" for --binary-out and --out).
TEST(CliMain, MessagesNameTheRightThing) {
  auto r = run_cli("formats --dtype e4m3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown option '--dtype' for 'fa4sim formats'"), std::string::npos) << r.err;
  r = run_cli("exp2 --degre 3");
  EXPECT_NE(r.err.find("did you mean '--degree'"), std::string::npos) << r.err;
  r = run_cli("exp2 --samples 1.5");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("4611686018427387904"), std::string::npos) << r.err;
  r = run_cli("roofline --tile 128x128x1");
  EXPECT_NE(r.err.find("--tile expects MxN (two whole numbers), got '128x128x1'"), std::string::npos) << r.err;
  r = run_cli("check --dtype bf16 --tau 0,4");  // a list, as every other --tau takes
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2^4 = 16"), std::string::npos) << r.out;
  r = run_cli("roofline --d 64,x");
  EXPECT_EQ(r.code, 2);
  const auto dir = fa4sim::test::temp_dir("messages");
  std::filesystem::create_directory(dir / "scores.npy");
  r = run_cli("rescale --dist file:" + (dir / "scores.npy").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("it is a directory"), std::string::npos) << r.err;
  r = run_cli("quantize 1 --binary-out /nonexistent-fa4sim/x.bin");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("pass another --binary-out path"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}
