// report.cpp: the report model's rendering: tables as text and Markdown, the JSON envelope with
// its provenance, and emit() (the output files themselves are output_file.cpp's).
#include "fa4sim/util/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/version.h"

namespace fa4sim {

namespace {
// Display width of a UTF-8 string (counts code points; enough for the symbols we print).
size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}
std::string pad(const std::string& s, size_t w, bool right) {
  const size_t d = display_width(s);
  if (d >= w) return s;
  return right ? std::string(w - d, ' ') + s : s + std::string(w - d, ' ');
}
bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  const char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}
}  // namespace

std::string render_text(const Table& t) {
  std::vector<size_t> w(t.columns.size(), 0);
  for (size_t i = 0; i < t.columns.size(); ++i) w[i] = display_width(t.columns[i]);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < row.size() && i < w.size(); ++i)
      w[i] = std::max(w[i], display_width(row[i]));
  std::string out;
  if (!t.title.empty()) out += t.title + "\n";
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string l = " ";
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < cells.size() ? cells[i] : "";
      l += pad(c, w[i], !header && i > 0 && looks_numeric(c));
      if (i + 1 < w.size()) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(t.columns, true);
  size_t total = 0;
  for (size_t x : w) total += x + 2;
  out += " " + std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& row : t.rows) line(row, false);
  for (const auto& n : t.notes) out += "  " + n + "\n";
  return out;
}

std::string fmt_percent(double percent, int digits, const char* unit) {
  return fmt::format("{:.{}f}{}", percent, digits, unit);
}

std::string render_markdown(const Table& t) {
  std::string out;
  if (!t.title.empty()) out += "**" + t.title + "**\n\n";
  out += "|";
  for (const auto& c : t.columns) out += " " + c + " |";
  out += "\n|";
  for (size_t i = 0; i < t.columns.size(); ++i) out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (size_t i = 0; i < t.columns.size(); ++i)
      out += " " + (i < row.size() ? row[i] : "") + " |";
    out += "\n";
  }
  if (!t.notes.empty()) {
    out += "\n";
    for (const auto& n : t.notes) out += "- " + n + "\n";
  }
  return out;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

double thread_cpu_seconds() {
#ifdef CLOCK_THREAD_CPUTIME_ID
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0)
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
#endif
  return 0.0;
}

json provenance(int threads, double elapsed_s) {
  json p = json::object();
  p["git"] = git_describe();
  p["date"] = utc_now_iso8601();
  p["host"] = host_name();
  p["threads"] = threads;
  p["elapsed_s"] = elapsed_s;
  return p;
}

json with_nonfinite_as_text(json j) {
  if (j.is_number_float()) {
    const double x = j.get<double>();
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return j;
  }
  if (j.is_structured())
    for (auto& v : j) v = with_nonfinite_as_text(std::move(v));
  return j;
}

json envelope(const Report& r, double elapsed_s) {
  json j = json::object();
  j["schema"] = "fa4sim/report-v1";
  j["command"] = r.command;
  j["fa4sim_version"] = version();
  j["params"] = with_nonfinite_as_text(r.params);
  j["results"] = with_nonfinite_as_text(r.results);
  j["provenance"] = provenance(r.threads, elapsed_s);
  for (auto it = r.timings.begin(); it != r.timings.end(); ++it)
    j["provenance"][it.key()] = it.value();
  return j;
}

void emit(const Report& r, const std::string& json_path, double elapsed_s) {
  const bool json_to_stdout = is_stdout_target(json_path);
  if (!json_to_stdout) {
    for (size_t i = 0; i < r.tables.size(); ++i) {
      if (i) std::fputs("\n", stdout);
      std::fputs(render_text(r.tables[i]).c_str(), stdout);
    }
    std::fflush(stdout);
  }
  if (json_path.empty()) return;
  const std::string text = envelope(r, elapsed_s).dump(2) + "\n";
  write_file_atomic(json_path, text);
}

}  // namespace fa4sim
