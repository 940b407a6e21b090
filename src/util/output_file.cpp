// output_file.cpp: where a report goes (Note [Output targets] in report.h): checking an output
// path before any work, and writing a file atomically (a temporary beside it, renamed over it,
// removed on SIGINT, SIGTERM and SIGHUP).
#include "fa4sim/util/report.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

namespace fs = std::filesystem;

namespace {

// "/dev/stdout" -> 1, "/dev/fd/63" -> 63, "/proc/self/fd/2" -> 2; -1 for any other path.
int fd_of_path(const std::string& p) {
  if (p == "/dev/stdin") return 0;
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string pre = prefix;
    if (p.size() > pre.size() && p.compare(0, pre.size(), pre) == 0) {
      const std::string n = p.substr(pre.size());
      if (n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
      return std::stoi(n);
    }
  }
  return -1;
}

struct Target {
  enum Kind { kStdout, kFd, kNew, kRegular, kOther } kind;
  std::string path;  // the final target, symlinks followed (kNew, kRegular, kOther)
  int fd = -1;       // kFd
  mode_t mode = 0;   // kRegular: the mode to keep
};

// Follows symlinks one hop at a time (a dangling link names the file to create) and stops at
// the process's own descriptors, which must be written through, not resolved to "pipe:[N]".
Target resolve_target(const std::string& path, const std::string& opt) {
  if (path == "-") return {Target::kStdout, path};
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (const int fd = fd_of_path(p); fd >= 0) {
      if (fcntl(fd, F_GETFD) == -1)
        throw Error(fmt::format("cannot write '{}': descriptor {} is not open", path, fd),
                    fmt::format("pass another {} path", opt));
      return {fd == 1 ? Target::kStdout : Target::kFd, p, fd};
    }
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0) return {Target::kNew, p};
    if (S_ISLNK(st.st_mode)) {
      std::string link(4096, '\0');
      const ssize_t n = readlink(p.c_str(), link.data(), link.size() - 1);
      if (n < 0)
        throw Error(fmt::format("cannot read the symlink '{}': {}", p, std::strerror(errno)),
                    fmt::format("pass another {} path", opt));
      link.resize(size_t(n));
      p = link[0] == '/' ? link : (fs::path(p).parent_path() / link).string();
      continue;
    }
    if (S_ISDIR(st.st_mode))
      throw Error(fmt::format("cannot write '{}': it is a directory", path),
                  "give a file name, e.g. out.json");
    if (S_ISREG(st.st_mode)) return {Target::kRegular, p, -1, st.st_mode & 07777};
    return {Target::kOther, p};
  }
  throw Error(fmt::format("cannot write '{}': too many levels of symlinks", path),
              fmt::format("pass another {} path", opt));
}

void check_parent_dir(const std::string& path, const std::string& target, const std::string& opt) {
  fs::path dir = fs::path(target).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw Error(fmt::format("cannot write '{}': directory '{}' does not exist", path, dir.string()),
                fmt::format("create it first, or pass another {} path", opt));
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("cannot write '{}': '{}' is not a directory", path, dir.string()),
                fmt::format("pass another {} path", opt));
  if (access(dir.c_str(), W_OK) != 0)
    throw Error(
        fmt::format("cannot write '{}': directory '{}' is not writable", path, dir.string()),
        fmt::format("pass another {} path", opt));
}

// Writes through an open descriptor (duplicated, so the caller's stays open).
void write_through_fd(int fd, const std::string& path,
                      const std::function<void(std::FILE*)>& body) {
  const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  std::FILE* f = dup_fd >= 0 ? fdopen(dup_fd, "wb") : nullptr;
  if (!f) {
    if (dup_fd >= 0) close(dup_fd);
    throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  try {
    body(f);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  const bool bad = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || bad)
    throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno ? errno : EIO)));
}

std::atomic<unsigned> g_tmp_counter{0};

// `<target>.tmp.<pid>.<n>` next to the target, the target's name shortened so that the whole
// stays within NAME_MAX (a 250-character file name is valid; its temporary must be too).
std::string temp_name_for(const std::string& target) {
  const fs::path p(target);
  const std::string suffix =
      fmt::format(".tmp.{}.{}", static_cast<long>(getpid()), g_tmp_counter.fetch_add(1));
  std::string base = p.filename().string();
  if (base.size() + suffix.size() > NAME_MAX) base.resize(NAME_MAX - suffix.size());
  return (p.parent_path() / (base + suffix)).string();
}

// ---- temporaries removed on SIGINT, SIGTERM and SIGHUP
//
// A run stopped while it writes (Ctrl-C, `timeout`) would leave its temporary file behind, up to
// gigabytes for a streamed `quantize --stdin --json`. Each temporary is registered in a fixed
// table of slots the signal handler can read without locks or allocation; the handler unlinks
// the armed ones (unlink is async-signal-safe), then re-raises the signal with its default action,
// so the exit status is the signal's, as before. A signal that is ignored or handled by the
// embedding process (Python's SIGINT) is left alone.
constexpr int kTempSlots = 64;
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 armed
  char path[PATH_MAX + 1] = {};
};
TempSlot g_temp_slots[kTempSlots];
std::once_flag g_temp_handlers_once;

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (TempSlot& s : g_temp_slots)
    if (s.state.load(std::memory_order_acquire) == 2) unlink(s.path);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_temp_cleanup() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_reraise;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

// Registers a temporary file for removal on a signal while it exists.
class TempRegistration {
 public:
  explicit TempRegistration(const std::string& path) {
    std::call_once(g_temp_handlers_once, install_temp_cleanup);
    if (path.size() > PATH_MAX) return;
    for (TempSlot& s : g_temp_slots) {
      int expected = 0;
      if (!s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
      std::memcpy(s.path, path.c_str(), path.size() + 1);
      s.state.store(2, std::memory_order_release);
      slot_ = &s;
      return;
    }
  }
  ~TempRegistration() {
    if (slot_) slot_->state.store(0, std::memory_order_release);
  }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

 private:
  TempSlot* slot_ = nullptr;
};

}  // namespace

bool is_stdout_target(const std::string& path) {
  if (path.empty()) return false;
  try {
    return resolve_target(path, "--json").kind == Target::kStdout;
  } catch (const Error&) {
    return false;
  }
}

bool same_output_target(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  try {
    const Target ta = resolve_target(a, "--json"), tb = resolve_target(b, "--json");
    if (ta.kind == Target::kStdout || tb.kind == Target::kStdout) return ta.kind == tb.kind;
    if (ta.kind == Target::kFd || tb.kind == Target::kFd)
      return ta.kind == tb.kind && ta.fd == tb.fd;
    std::error_code ec;
    if (ta.kind != Target::kNew && tb.kind != Target::kNew)
      return fs::equivalent(ta.path, tb.path, ec);
    const auto norm = [&](const std::string& p) {
      return fs::weakly_canonical(fs::absolute(p, ec).lexically_normal(), ec);
    };
    return norm(ta.path) == norm(tb.path);
  } catch (const Error&) {
    return false;
  }
}

void check_output_path(const std::string& path, const std::string& opt) {
  if (path.empty() || path == "-") return;
  const Target t = resolve_target(path, opt);
  switch (t.kind) {
    case Target::kStdout:
    case Target::kFd: return;
    case Target::kRegular:
      // A file without write permission is not replaced, as cp and the shell's > refuse it (the
      // rename would need only the directory's permission). The mode bits decide for root too.
      if ((t.mode & 0222) == 0 || access(t.path.c_str(), W_OK) != 0)
        throw Error(fmt::format("cannot write '{}': it is read-only", path),
                    fmt::format("make it writable (chmod u+w), or pass another {} path", opt));
      check_parent_dir(path, t.path, opt);
      return;
    case Target::kNew: check_parent_dir(path, t.path, opt); return;
    case Target::kOther:
      if (access(t.path.c_str(), W_OK) != 0)
        throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)),
                    fmt::format("pass another {} path", opt));
      return;
  }
}

void check_report_path(const std::string& path) { check_output_path(path, "--json"); }

void write_output(const std::string& path, const std::function<void(std::FILE*)>& body,
                  const std::string& opt) {
  check_output_path(path, opt);
  const Target t = resolve_target(path, opt);
  if (t.kind == Target::kStdout) {
    std::fflush(stdout);
    write_through_fd(1, path, body);
    return;
  }
  if (t.kind == Target::kFd) {
    write_through_fd(t.fd, path, body);
    return;
  }
  if (t.kind == Target::kOther) {  // a device node, FIFO or socket: write through, never replace
    const int fd = open(t.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
    try {
      write_through_fd(fd, path, body);
    } catch (...) {
      close(fd);
      throw;
    }
    close(fd);
    return;
  }
  // A regular file or a new one: a temporary next to the final target (symlinks followed, so a
  // link keeps pointing where it did), then rename(2) over it. Readers see the old or the new.
  const std::string tmp = temp_name_for(t.path);
  const TempRegistration registered(tmp);  // removed on SIGINT/SIGTERM/SIGHUP while it exists
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    throw Error(fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)),
                "check permissions and disk space");
  if (t.kind == Target::kRegular) (void)fchmod(fd, t.mode);
  try {
    write_through_fd(fd, path, body);
  } catch (...) {
    close(fd);
    std::remove(tmp.c_str());
    throw;
  }
  if (close(fd) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot write '{}': {}", tmp, std::strerror(errno)),
                "check disk space");
  }
  if (std::rename(tmp.c_str(), t.path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot rename '{}' to '{}': {}", tmp, t.path, std::strerror(e)),
                "check permissions");
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_output(path, [&](std::FILE* f) {
    if (std::fwrite(content.data(), 1, content.size(), f) != content.size())
      throw Error(fmt::format("cannot write '{}': {}", path, std::strerror(errno)),
                  "check disk space");
  });
}

}  // namespace fa4sim
