// error.h: the one exception type the library throws at its boundary (config validation,
// file I/O). Only src/cli/main.cpp catches it and prints "fa4sim: error: <what> (<hint>)".
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace fa4sim {

// Exit codes used by the CLI (README "Output and exit codes", docs/style.md §7).
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // a check ran and failed (mismatch, unsafe config)
inline constexpr int kExitUsage = 2;        // bad input: usage, config, files
inline constexpr int kExitNoGpu = 3;        // a GPU command found no CUDA device

class Error : public std::runtime_error {
 public:
  // `what` says what is wrong, `hint` how to fix it. Rendered as "<what> (<hint>)".
  Error(std::string what, std::string hint = {}, int exit_code = kExitUsage)
      : std::runtime_error(hint.empty() ? what : what + " (" + hint + ")"), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace fa4sim
