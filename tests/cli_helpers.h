// cli_helpers.h: run the fa4sim binary from a test and capture exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace fa4sim::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fresh temporary directory per call (removed by the caller if it cares). Throws when none
// can be made: callers remove_all() what this returns, so it must never be a shared folder.
inline std::filesystem::path temp_dir(const std::string& tag) {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("fa4sim-" + tag + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data()))
    throw std::runtime_error("mkdtemp(" + tmpl + ") failed: " + std::strerror(errno));
  return std::filesystem::path(tmpl);
}

// Runs `FA4SIM_BIN args` through the shell (args are shell words, quote as needed), under
// `ulimit -v limit_kb` when limit_kb > 0.
inline CliResult run_cli(const std::string& args, const std::string& stdin_file = "",
                         long limit_kb = 0) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(getpid()) + "-" + std::to_string(counter++);
  const std::string out = (dir / ("fa4sim-cli-" + tag + ".out")).string();
  const std::string err = (dir / ("fa4sim-cli-" + tag + ".err")).string();
  std::string cmd = std::string(FA4SIM_BIN) + " " + args + " >" + out + " 2>" + err;
  if (limit_kb > 0) cmd = "ulimit -v " + std::to_string(limit_kb) + "; " + cmd;
  cmd += stdin_file.empty() ? " </dev/null" : " <" + stdin_file;
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

// Runs `fa4sim CMDLINE --json DIR/out.json` and checks a refused input: exit 2, our error prefix,
// `needle` on stderr, nothing on stdout, and no report file (nor a temporary one) in DIR.
inline void expect_usage_error_without_report(const std::string& cmdline,
                                              const std::string& needle) {
  const auto dir = temp_dir("bad");
  const auto out = dir / "out.json";
  auto r = run_cli(cmdline + " --json " + out.string());
  EXPECT_EQ(r.code, 2) << cmdline << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << cmdline << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << cmdline << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << cmdline << "\n" << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << cmdline << ": a report file was written";
  std::filesystem::remove_all(dir);
}

// Runs `fa4sim ARGS` and checks a refused input: exit 2, our error prefix and `needle` on
// stderr, nothing on stdout. Returns the result for further checks.
inline CliResult expect_refused(const std::string& args, const std::string& needle,
                                const std::string& stdin_file = "") {
  auto r = run_cli(args, stdin_file);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find("fa4sim: error: "), std::string::npos) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
  return r;
}

}  // namespace fa4sim::test
