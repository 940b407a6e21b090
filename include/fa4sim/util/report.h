// report.h: human tables and the JSON report envelope shared by every command.
//
// Envelope (schema "fa4sim/report-v1"):
//   {"schema", "command", "fa4sim_version", "params": {every option, defaults included},
//    "results": {...}, "provenance": {"git", "date", "host", "threads", "elapsed_s"}}
// Files are written atomically: a temporary file in the same directory, then rename(2), so a
// failed run never leaves a partial report.
#pragma once

#include <chrono>
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

struct Report {
  std::string command;
  json params = json::object();
  json results = json::object();
  std::vector<Table> tables;  // the human view of `results`
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

json provenance(int threads, double elapsed_s);
json envelope(const Report& r, double elapsed_s);
std::string utc_now_iso8601();
std::string host_name();

// Throws Error when a report could not be written to `path` (its directory is missing or is
// not a directory). "-" (stdout) and "" (no report) always pass. Call before the analysis runs.
void check_report_path(const std::string& path);

// Writes `content` to `path` atomically (tmp + rename). Throws Error on failure.
void write_file_atomic(const std::string& path, const std::string& content);

// The end of every command: print the tables (unless the JSON goes to stdout) and write the
// JSON report to `json_path` ("" = none, "-" = stdout).
void emit(const Report& r, const std::string& json_path, double elapsed_s);

}  // namespace fa4sim
