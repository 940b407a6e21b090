// subprocess.h: the one way fa4sim runs another program (a Python driver of scripts/drivers/, the plots):
// a /bin/sh command line whose words are quoted by sh_quote, run to completion (run_shell) or
// with its stdout read back (Pipe). Every caller builds its command with shell_command, so a path
// or an option value with a space or a quote in it stays one word.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace fa4sim {

// `s` as one /bin/sh word: as is when it holds only characters the shell leaves alone
// (letters, digits and -_./=:,+@%), else single-quoted ('it'\''s').
std::string sh_quote(const std::string& s);

// The words quoted and joined by spaces, then `tail` as it is (a redirection: ">/dev/null 2>&1").
std::string shell_command(const std::vector<std::string>& words, const std::string& tail = "");

// Runs `cmd` with /bin/sh and waits: its exit code, -1 when it could not start or died by a signal.
int run_shell(const std::string& cmd);

// A process's stdout through popen; pclose on scope exit. `f` is nullptr when it could not start.
struct Pipe {
  explicit Pipe(const std::string& cmd);
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  // Waits for the process: its exit code, -1 when it died by a signal.
  int close();
  FILE* f;
};

// One line of `f` without its newline ("" at the end); the rest of `f`.
std::string read_line(FILE* f);
std::string read_all(FILE* f);

}  // namespace fa4sim
