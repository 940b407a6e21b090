// The CLI shell: subcommand table, did-you-mean, --version, --help, exit codes.
#include <gtest/gtest.h>

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

TEST(CliMain, NoSubcommandIsUsageError) {
  auto r = run_cli("");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("fa4sim: error:"), std::string::npos) << r.err;
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
