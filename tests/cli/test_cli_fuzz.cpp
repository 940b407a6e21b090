// Fuzz-style CLI test: random argument vectors built from the option grammar (each command's
// options as its --help lists them, values from a pool of edge cases) must end with an exit code
// in {0, 1, 2, 3} and never by a signal (a crash, an abort, an uncaught exception).
//
// Bounded: a fixed number of runs (FA4SIM_FUZZ_RUNS, default 120) from a fixed seed
// (FA4SIM_FUZZ_SEED, default 1), each under `ulimit -t 3` (CPU seconds). A run stopped by that
// limit (SIGXCPU / SIGKILL: random sizes can ask for hours of work) is counted and printed, not a
// failure; every other signal is. Every failure prints the command line to reproduce it.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_helpers.h"

namespace {

struct Grammar {
  std::string command;  // "exp2", "gpu attention", ...
  std::string cheap;    // options that keep a valid run small (random ones may override them)
  std::vector<std::string> options;
};

std::vector<std::string> options_of(const std::string& command) {
  const auto h = fa4sim::test::run_cli(command + " --help");
  std::vector<std::string> out;
  std::istringstream in(h.out);
  std::string line;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(' ');
    if (b == std::string::npos || line.compare(b, 2, "--") != 0) continue;
    std::string name = line.substr(b, line.find_first_of(" =:", b) - b);
    if (name.find(',') != std::string::npos) name = name.substr(0, name.find(','));
    if (name == "--help" || name == "--exhaustive" || name == "--all-float32" ||
        name == "--bench" || name == "--stdin")
      continue;  // unbounded work or reads the terminal
    out.push_back(name);
  }
  return out;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

// Random values end up as file names (`--json 1e308`, `--out upstream`): run in a fresh folder so
// nothing lands in the caller's working directory (a source tree, say), and remove it afterwards.
struct InTempDir {
  InTempDir() : dir(fa4sim::test::temp_dir("fuzz")), old(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~InTempDir() {
    std::filesystem::current_path(old);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::filesystem::path dir, old;
};

TEST(CliFuzz, RandomArgumentsNeverCrash) {
  const InTempDir cwd;
  const int runs =
      std::getenv("FA4SIM_FUZZ_RUNS") ? std::atoi(std::getenv("FA4SIM_FUZZ_RUNS")) : 120;
  const unsigned seed =
      std::getenv("FA4SIM_FUZZ_SEED") ? unsigned(std::atoi(std::getenv("FA4SIM_FUZZ_SEED"))) : 1u;
  std::vector<Grammar> g = {
      {"exp2", "--samples 2000 --threads 2", {}},
      {"formats", "", {}},
      {"quantize", "1.5", {}},
      {"check", "", {}},
      {"rescale", "--rows 8 --keys 256 --d 8 --threads 2", {}},
      {"attention", "--batch 1 --heads 2 --kv-heads 1 --d 16 --seq 64 --threads 2", {}},
      {"roofline", "--arch h100_sxm", {}},
      {"gpu info", "", {}},
      {"gpu attention", "--seq 64", {}},
      {"version", "", {}},
  };
  for (auto& c : g) {
    c.options = options_of(c.command);
    ASSERT_FALSE(c.options.empty() && c.command != "version") << c.command;
  }
  const std::vector<std::string> values = {"",
                                           "0",
                                           "-1",
                                           "1",
                                           "2",
                                           "1.5",
                                           "1e308",
                                           "-1e308",
                                           "1e-320",
                                           "nan",
                                           "inf",
                                           "-inf",
                                           "abc",
                                           "1,2",
                                           "0,4,8",
                                           ",",
                                           "128x128",
                                           "64x64x1",
                                           "e4m3",
                                           "bf16",
                                           "fp16",
                                           "e5m2",
                                           "fp32",
                                           "reverse",
                                           "forward",
                                           "auto",
                                           "emu3",
                                           "schedule:10,4,1",
                                           "rise:24",
                                           "normal:1.5",
                                           "peaked",
                                           "file:/nonexistent.npy",
                                           "/dev/null",
                                           "-",
                                           "/nonexistent-dir/x.json",
                                           "9999999999",
                                           "4096",
                                           "65",
                                           "0x10",
                                           "--",
                                           "-x",
                                           "h100_sxm",
                                           "b200",
                                           "64,128",
                                           "1e6",
                                           "upstream",
                                           "fp8-tau4",
                                           "satfinite",
                                           "ieee",
                                           "stochastic"};
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  int bad = 0, limited = 0;
  int by_code[4] = {0, 0, 0, 0};
  for (int i = 0; i < runs; ++i) {
    const Grammar& c = g[pick(g.size())];
    std::string args = c.command + " " + c.cheap;
    const int n_opts = 1 + int(pick(4));
    for (int k = 0; k < n_opts && !c.options.empty(); ++k) {
      args += " " + c.options[pick(c.options.size())];
      if (pick(5) != 0) args += " " + quote(values[pick(values.size())]);
    }
    if (pick(3) == 0) args += " --json /dev/null";
    const std::string cmd = "ulimit -t 3; " + std::string(FA4SIM_BIN) + " " + args +
                            " >/dev/null 2>/dev/null </dev/null";
    const int status = std::system(cmd.c_str());
    // sh reports a child killed by signal S as exit 128 + S.
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 128 + SIGXCPU || code == 128 + SIGKILL) {
      ++limited;
      continue;
    }
    if (code >= 0 && code <= 3) ++by_code[code];
    if (code > 3) {
      ++bad;
      ADD_FAILURE() << "exit " << code
                    << (code > 128 ? " (signal " + std::to_string(code - 128) + ")" : "")
                    << ": fa4sim " << args;
    }
  }
  std::printf(
      "fuzz: %d runs (seed %u): exit 0: %d, 1: %d, 2: %d, 3: %d; %d stopped by the 3 s CPU "
      "limit, %d outside {0,1,2,3}\n",
      runs, seed, by_code[0], by_code[1], by_code[2], by_code[3], limited, bad);
  EXPECT_GT(by_code[0], 0) << "no valid argument vector at all: the grammar is broken";
  EXPECT_LE(limited, runs / 4)
      << "too many runs hit the CPU limit: the cheap defaults no longer hold";
}
