// subprocess.cpp: quoting and running shell commands (see subprocess.h).
#include "fa4sim/util/subprocess.h"

#include <sys/wait.h>

#include <cstdlib>

namespace fa4sim {

std::string sh_quote(const std::string& s) {
  bool plain = !s.empty();
  for (const char c : s) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string("-_./=:,+@%").find(c) != std::string::npos;
    plain = plain && safe;
  }
  if (plain) return s;
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_command(const std::vector<std::string>& words, const std::string& tail) {
  std::string cmd;
  for (const auto& w : words) cmd += (cmd.empty() ? "" : " ") + sh_quote(w);
  return tail.empty() ? cmd : cmd + " " + tail;
}

int run_shell(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  if (st == -1 || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

Pipe::Pipe(const std::string& cmd) : f(popen(cmd.c_str(), "r")) {}

Pipe::~Pipe() {
  if (f != nullptr) pclose(f);
}

int Pipe::close() {
  const int st = pclose(f);
  f = nullptr;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string read_line(FILE* f) {
  std::string s;
  for (int c = fgetc(f); c != EOF && c != '\n'; c = fgetc(f)) s += char(c);
  return s;
}

std::string read_all(FILE* f) {
  std::string s;
  char buf[1 << 14];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

}  // namespace fa4sim
