// report.h: human tables and the JSON report envelope shared by every command.
//
// Envelope (schema "fa4sim/report-v1"):
//   {"schema", "command", "fa4sim_version", "params": {every option, defaults included},
//    "results": {...}, "provenance": {"git", "date", "host", "threads", "elapsed_s", timings...}}
// `results` holds results only: two runs with the same params give byte-identical `results`;
// wall-clock times go to `provenance`. A non-finite number is written as the string "nan",
// "inf" or "-inf" everywhere (JSON has none, and null would lose inf vs nan).
//
// Note [Output targets]: every file fa4sim writes (--json, --binary-out, report --out) goes
// through write_output(), which picks by what the path names:
//   "-", /dev/stdout, /dev/fd/1, /proc/self/fd/1   stdout (the tables are then not printed)
//   /dev/fd/N, /proc/self/fd/N, /dev/stderr        that open descriptor, written through
//                                                  (process substitution: --json >(jq .))
//   a regular file or a new name                   a temporary file next to it, then rename(2),
//                                                  so a failed run never leaves a partial report
//   a symlink                                      followed to its target (a dangling one names
//                                                  the file to create); the link itself stays
//   a device node, FIFO or socket                  opened and written through, never replaced
// Without write permission on the directory the rename cannot happen, and a regular file without
// write permission is not replaced (as cp refuses it): both are errors, found before the work by
// check_output_path(). The temporary is removed when the run gets SIGINT, SIGTERM or SIGHUP, and
// its name is shortened to fit NAME_MAX. Inside `report --out DIR` the files are fa4sim's own: a
// symlink there is replaced, not followed (ReportContext::own_path).
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fa4sim {

using json = nlohmann::ordered_json;

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // printed under the table
};

std::string render_text(const Table& t);      // aligned columns for a terminal
std::string render_markdown(const Table& t);  // GitHub-flavoured markdown

// A percentage for a table cell: `percent` (already x 100) with `digits` decimals, then `unit`
// ("12.345%"; the roofline tables write "12.34 %").
std::string fmt_percent(double percent, int digits, const char* unit = "%");

struct Report {
  std::string command;
  json params = json::object();
  json results = json::object();
  json timings = json::object();  // wall-clock measurements: merged into `provenance`
  std::vector<Table> tables;      // the human view of `results`
  int threads = 1;
};

// Wall-clock stopwatch for provenance.elapsed_s.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// CPU seconds this thread has run (CLOCK_THREAD_CPUTIME_ID): time per phase that a shared machine's
// other jobs do not inflate (0 where the clock is missing).
double thread_cpu_seconds();

json provenance(int threads, double elapsed_s);
json envelope(const Report& r, double elapsed_s);
// `j` with every non-finite float replaced by "nan", "inf" or "-inf".
json with_nonfinite_as_text(json j);
std::string utc_now_iso8601();
std::string host_name();

// Throws Error when `path` could not be written (Note [Output targets]): a missing or
// unwritable directory, a directory as the path, a descriptor that is not open. "-" (stdout) and
// "" (no report) always pass. Call before the work runs; `opt` names the option in hints.
void check_output_path(const std::string& path, const std::string& opt);
void check_report_path(const std::string& path);  // check_output_path(path, "--json")

// Writes what `body` writes to `path` (Note [Output targets]): atomically for regular files,
// through for streams and devices. Throws Error on failure, leaving no partial regular file.
void write_output(const std::string& path, const std::function<void(std::FILE*)>& body,
                  const std::string& opt = "--json");
void write_file_atomic(const std::string& path, const std::string& content);

// Whether `path` names this process's stdout ("-", /dev/stdout, /dev/fd/1, ...).
bool is_stdout_target(const std::string& path);
// Whether two output paths name the same file or stream (symlinks and hard links followed).
bool same_output_target(const std::string& a, const std::string& b);

// The end of every command: print the tables (unless the JSON goes to stdout) and write the
// JSON report to `json_path` ("" = none, "-" = stdout).
void emit(const Report& r, const std::string& json_path, double elapsed_s);

}  // namespace fa4sim
