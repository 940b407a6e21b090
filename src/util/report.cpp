#include "fa4sim/util/report.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/version.h"

namespace fa4sim {

namespace fs = std::filesystem;

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
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], display_width(row[i]));
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
    for (size_t i = 0; i < t.columns.size(); ++i) out += " " + (i < row.size() ? row[i] : "") + " |";
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

json provenance(int threads, double elapsed_s) {
  json p = json::object();
  p["git"] = git_describe();
  p["date"] = utc_now_iso8601();
  p["host"] = host_name();
  p["threads"] = threads;
  p["elapsed_s"] = elapsed_s;
  return p;
}

json envelope(const Report& r, double elapsed_s) {
  json j = json::object();
  j["schema"] = "fa4sim/report-v1";
  j["command"] = r.command;
  j["fa4sim_version"] = version();
  j["params"] = r.params;
  j["results"] = r.results;
  j["provenance"] = provenance(r.threads, elapsed_s);
  return j;
}

void check_report_path(const std::string& path) {
  if (path.empty() || path == "-") return;
  fs::path p(path);
  fs::path dir = p.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw Error(fmt::format("cannot write report '{}': directory '{}' does not exist", path,
                            dir.string()),
                "create it first, or pass another --json path");
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("cannot write report '{}': '{}' is not a directory", path, dir.string()),
                "pass another --json path");
  if (fs::is_directory(p, ec))
    throw Error(fmt::format("cannot write report '{}': it is a directory", path),
                "give a file name, e.g. out.json");
  if (access(dir.c_str(), W_OK) != 0)
    throw Error(fmt::format("cannot write report '{}': directory '{}' is not writable", path,
                            dir.string()),
                "pass another --json path");
}

void write_file_atomic(const std::string& path, const std::string& content) {
  check_report_path(path);
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(fmt::format("cannot create '{}'", tmp), "check permissions and disk space");
    f << content;
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw Error(fmt::format("cannot write '{}'", tmp), "check disk space");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot rename '{}' to '{}'", tmp, path), "check permissions");
  }
}

void emit(const Report& r, const std::string& json_path, double elapsed_s) {
  if (json_path != "-") {
    for (size_t i = 0; i < r.tables.size(); ++i) {
      if (i) std::fputs("\n", stdout);
      std::fputs(render_text(r.tables[i]).c_str(), stdout);
    }
    std::fflush(stdout);
  }
  if (json_path.empty()) return;
  const std::string text = envelope(r, elapsed_s).dump(2) + "\n";
  if (json_path == "-") {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  } else {
    write_file_atomic(json_path, text);
  }
}

}  // namespace fa4sim
