// Where reports go (Note [Output targets] in report.h): every kind of target a Unix user passes
// to --json or --binary-out, as root and as an unprivileged user. The property: a regular file
// is replaced atomically (a new inode, no temporary left), anything else is written through and
// never replaced (a symlink stays a symlink, a FIFO a FIFO, a device node a device node).
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fa4sim/core/formats.h"
#include "cli_helpers.h"

namespace fs = std::filesystem;
using fa4sim::test::CliResult;
using fa4sim::test::slurp;
using fa4sim::test::temp_dir;

namespace {

constexpr uid_t kNobody = 65534;

// Runs `sh -c '<prefix> FA4SIM_BIN <args> <redirections>'`; prefix drops privileges or is empty.
CliResult run_as(const std::string& prefix, const std::string& args, const fs::path& dir) {
  static int counter = 0;
  const std::string tag = std::to_string(getpid()) + "-" + std::to_string(counter++);
  const std::string out = (dir / ("stdout-" + tag)).string(),
                    err = (dir / ("stderr-" + tag)).string();
  const std::string cmd = "cd " + dir.string() + " && " + prefix + std::string(FA4SIM_BIN) + " " +
                          args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(("sh -c '" + cmd + "'").c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

bool is_formats_report(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    return j["command"] == "formats" &&
           j["results"]["formats"].size() == fa4sim::all_formats().size();
  } catch (...) {
    return false;
  }
}

struct stat lstat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(lstat(p.c_str(), &st), 0) << p;
  return st;
}

// Every target kind, through one user (prefix "" = this process's user).
void check_targets(const std::string& prefix, uid_t uid) {
  const fs::path dir = temp_dir("output");
  ASSERT_EQ(chown(dir.c_str(), uid, uid), 0);

  // A regular file: replaced by rename (new inode; a hard link keeps the old text), no temp left.
  {
    const fs::path f = dir / "r.json";
    std::ofstream(f) << "old\n";
    ASSERT_EQ(chown(f.c_str(), uid, uid), 0);
    fs::create_hard_link(f, dir / "r.old");
    const ino_t before = lstat_of(f).st_ino;
    auto r = run_as(prefix, "formats --json r.json", dir);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(is_formats_report(slurp(f))) << slurp(f);
    EXPECT_NE(lstat_of(f).st_ino, before) << "a regular file is replaced, not rewritten in place";
    EXPECT_EQ(slurp(dir / "r.old"), "old\n");
    EXPECT_NE(r.out.find("e4m3"), std::string::npos) << "the table still goes to stdout";
  }
  // A symlink: written through to its target, the link stays.
  {
    fs::create_directory(dir / "sub");
    ASSERT_EQ(chown((dir / "sub").c_str(), uid, uid), 0);
    fs::create_symlink("sub/target.json", dir / "link.json");
    auto r = run_as(prefix, "formats --json link.json", dir);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(S_ISLNK(lstat_of(dir / "link.json").st_mode)) << "the symlink was replaced";
    EXPECT_TRUE(is_formats_report(slurp(dir / "sub" / "target.json")));
    auto again = run_as(prefix, "formats --json link.json", dir);  // now onto an existing file
    EXPECT_EQ(again.code, 0) << again.err;
    EXPECT_TRUE(S_ISLNK(lstat_of(dir / "link.json").st_mode));
    int files = 0;
    for (auto& e : fs::directory_iterator(dir / "sub")) (void)e, ++files;
    EXPECT_EQ(files, 1) << "no temporary left next to the target";
  }
  // A FIFO being read.
  {
    const fs::path p = dir / "pipe";
    ASSERT_EQ(mkfifo(p.c_str(), 0666), 0);
    ASSERT_EQ(chown(p.c_str(), uid, uid), 0);
    std::string got;
    std::thread reader([&] { got = slurp(p); });
    auto r = run_as(prefix, "formats --json pipe", dir);
    reader.join();
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(is_formats_report(got)) << got;
    EXPECT_TRUE(S_ISFIFO(lstat_of(p).st_mode)) << "the FIFO was replaced";
  }
  // A device node: /dev/null itself when unprivileged; as root a private copy of it (mknod), so
  // that a failure here cannot replace the system's /dev/null.
  {
    std::string node = "/dev/null";
    if (getuid() == 0) {
      node = (dir / "null").string();
      ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
      ASSERT_EQ(chmod(node.c_str(), 0666), 0);  // past the umask
    }
    auto r = run_as(prefix, "formats --json " + node, dir);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(S_ISCHR(lstat_of(node).st_mode)) << node << " was replaced";
    auto q = run_as(prefix, "quantize 1.5 2 --binary-out " + node, dir);
    EXPECT_EQ(q.code, 0) << q.err;
    EXPECT_TRUE(S_ISCHR(lstat_of(node).st_mode)) << node << " was replaced by --binary-out";
  }
  // stdout: "-", /dev/stdout and /dev/fd/1 all give the JSON alone on stdout.
  for (const char* t : {"-", "/dev/stdout", "/dev/fd/1"}) {
    auto r = run_as(prefix, std::string("formats --json ") + t, dir);
    EXPECT_EQ(r.code, 0) << t << ": " << r.err;
    EXPECT_TRUE(is_formats_report(r.out)) << t << ":\n" << r.out;
  }
  // Another open descriptor (what process substitution passes: --json >(jq .) is /dev/fd/63).
  {
    auto r = run_as(prefix, "formats --json /dev/fd/5 5>fd5.json", dir);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(is_formats_report(slurp(dir / "fd5.json")));
    auto closed = run_as(prefix, "formats --json /dev/fd/7", dir);
    EXPECT_EQ(closed.code, 2);
    EXPECT_NE(closed.err.find("descriptor 7 is not open"), std::string::npos) << closed.err;
  }
  // A full device fails with exit 2 and says why (as root: a private /dev/full, as above).
  {
    std::string node = "/dev/full";
    if (getuid() == 0) {
      node = (dir / "full").string();
      ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
      ASSERT_EQ(chmod(node.c_str(), 0666), 0);
    }
    auto r = run_as(prefix, "formats --json " + node, dir);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("No space left"), std::string::npos) << r.err;
    EXPECT_TRUE(S_ISCHR(lstat_of(node).st_mode));
  }
  fs::remove_all(dir);
}

}  // namespace

TEST(CliOutput, EveryTargetKindAsThisUser) { check_targets("", getuid()); }

TEST(CliOutput, EveryTargetKindAsUnprivilegedUser) {
  if (getuid() != 0) {
    std::printf("not root: EveryTargetKindAsThisUser already ran unprivileged\n");
    return;
  }
  if (std::system("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "setpriv is missing";
  check_targets("setpriv --reuid=65534 --regid=65534 --clear-groups ", kNobody);
}

TEST(CliOutput, JsonAndBinaryOutOnOneFileAreRefused) {
  const fs::path dir = temp_dir("output");
  fs::create_symlink("s.bin", dir / "alias.json");
  for (const char* json : {"s.bin", "alias.json", "./s.bin"}) {
    auto r = run_as("", std::string("quantize 1 --binary-out s.bin --json ") + json, dir);
    EXPECT_EQ(r.code, 2) << json;
    EXPECT_NE(r.err.find("name the same file"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "s.bin"));
  fs::remove_all(dir);
}

TEST(CliOutput, EmptyJsonPathIsRefused) {
  for (const char* cmd : {"formats", "roofline --arch h100_sxm", "quantize 1"}) {
    auto r = fa4sim::test::run_cli(std::string(cmd) + " --json ''");
    EXPECT_EQ(r.code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.err.find("--json"), std::string::npos) << r.err;
  }
}

TEST(CliOutput, TempDirNeverFallsBackToASharedFolder) {
  EXPECT_THROW(temp_dir("no-such-folder/x"), std::runtime_error);
}

// A target without write permission is not replaced, as cp and the shell's > refuse it: exit 2,
// the file keeps its content, as this user and as an unprivileged one (root passes access(2), so
// the mode bits decide).
TEST(CliOutput, ReadOnlyTargetIsRefused) {
  const fs::path dir = temp_dir("output");
  ASSERT_EQ(chown(dir.c_str(), kNobody, kNobody), 0);
  const fs::path f = dir / "ro.json";
  std::ofstream(f) << "keep\n";
  ASSERT_EQ(chown(f.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(chmod(f.c_str(), 0444), 0);
  std::vector<std::string> users = {""};
  if (getuid() == 0 && std::system("command -v setpriv >/dev/null") == 0)
    users.push_back("setpriv --reuid=65534 --regid=65534 --clear-groups ");
  for (const auto& prefix : users) {
    for (const char* args : {"check --json ro.json", "quantize 1.5 --binary-out ro.json"}) {
      auto r = run_as(prefix, args, dir);
      EXPECT_EQ(r.code, 2) << prefix << args << "\n" << r.err;
      EXPECT_NE(r.err.find("fa4sim: error: cannot write 'ro.json': it is read-only"),
                std::string::npos)
          << r.err;
      EXPECT_EQ(slurp(f), "keep\n");
    }
  }
  fs::remove_all(dir);
}

// Ctrl-C (SIGINT) or SIGTERM while a report is being written leaves no temporary file next to
// the target, and the target is not created.
TEST(CliOutput, InterruptedWriteLeavesNoTemporary) {
  const fs::path dir = temp_dir("output");
  for (const int sig : {SIGINT, SIGTERM}) {
    // seq 1 30000000 | fa4sim quantize --stdin --json q.json, in `dir`, the signals at their
    // default (as a shell's foreground job: the CLI installs its handlers only then).
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t seq = fork();
    if (seq == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      execlp("seq", "seq", "1", "30000000", static_cast<char*>(nullptr));
      _exit(127);
    }
    const pid_t cli = fork();
    if (cli == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      dup2(fds[0], 0);
      close(fds[0]);
      close(fds[1]);
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      if (chdir(dir.c_str()) != 0) _exit(126);
      execl(FA4SIM_BIN, FA4SIM_BIN, "quantize", "--stdin", "--json", "q.json",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[0]);
    close(fds[1]);
    // The signal arrives mid-write: once the temporary file holds data (polled every 10 ms, for at
    // most 60 s), not after a fixed time that a loaded machine may not have used for writing.
    bool writing = false;
    for (int k = 0; k < 6000 && !writing; ++k) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir, ec))
        writing = writing || (e.path().filename().string().rfind("q.json.tmp", 0) == 0 &&
                              fs::file_size(e.path(), ec) > 0 && !ec);
      if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(writing) << sig << ": no temporary file with data appeared";
    kill(cli, sig);
    int status = 0;
    ASSERT_EQ(waitpid(cli, &status, 0), cli);
    kill(seq, SIGKILL);
    waitpid(seq, nullptr, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
        << sig << ": the run was meant to end by the signal (status " << status << ")";
    int files = 0;
    for (auto& e : fs::directory_iterator(dir)) (void)e, ++files;
    EXPECT_EQ(files, 0) << sig << ": a temporary file was left behind";
  }
  fs::remove_all(dir);
}

// Tables that cannot be written to stdout (a full device) are an error, not a silent exit 0.
TEST(CliOutput, FailedStdoutIsAnError) {
  const fs::path dir = temp_dir("output");
  for (const char* args : {"check", "formats", "version", "exp2 --samples 1000", "--help"}) {
    const std::string cmd =
        std::string(FA4SIM_BIN) + " " + args + " >/dev/full 2>" + (dir / "err").string();
    const int status = std::system(cmd.c_str());
    const std::string err = slurp(dir / "err");
    EXPECT_EQ(WEXITSTATUS(status), 2) << args << "\n" << err;
    EXPECT_NE(err.find("fa4sim: error: cannot write stdout"), std::string::npos) << args << "\n"
                                                                                 << err;
  }
  fs::remove_all(dir);
}

// A file name of 250 characters is a valid name; its temporary name must be valid too.
TEST(CliOutput, LongFileNameIsAccepted) {
  const fs::path dir = temp_dir("output");
  const fs::path f = dir / (std::string(245, 'n') + ".json");
  auto r = fa4sim::test::run_cli("formats --json " + f.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(is_formats_report(slurp(f)));
  int files = 0;
  for (auto& e : fs::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}
