// What `fa4sim report` hands each section (include/fa4sim/report/context.h).
#include "fa4sim/report/context.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

std::string ReportContext::own_path(const std::string& file) const {
  const std::filesystem::path p = std::filesystem::path(out_dir) / file;
  std::error_code ec;
  if (std::filesystem::is_symlink(p, ec)) std::filesystem::remove(p, ec);
  return p.string();
}

void ReportContext::write(const Report& r, const std::string& file, double elapsed_s) {
  const std::string path = own_path(file);
  write_output(
      path,
      [&](std::FILE* f) {
        const std::string text = envelope(r, elapsed_s).dump(2) + "\n";
        if (std::fwrite(text.data(), 1, text.size(), f) != text.size())
          throw Error(fmt::format("cannot write '{}'", path), std::strerror(errno));
      },
      "--out");
  index.push_back({{"command", r.command}, {"file", file}, {"elapsed_s", elapsed_s}});
}

void ReportContext::load_published(const std::string& name) {
  if (!published_.contains(name)) published_.emplace(name, PublishedValues::load(name));
}

const PublishedValues& ReportContext::published(const std::string& name) const {
  const auto it = published_.find(name);
  if (it == published_.end())
    throw Error(
        fmt::format("report section asked for published figures '{}' it did not declare", name),
        "add the name to its row in report_sections() (src/report/sections.cpp)");
  return it->second;
}

std::string ReportContext::findings_markdown() const {
  Table t;
  t.title = "Findings (each is explained in its section below)";
  t.columns = {"finding", "fa4sim", "published", "pass"};
  for (const auto& f : findings) {
    t.rows.push_back({f.what, f.fa4sim, f.published.empty() ? "-" : f.published,
                      f.pass ? (*f.pass ? "pass" : "FAIL") : "-"});
    if (!f.note.empty() && std::find(t.notes.begin(), t.notes.end(), f.note) == t.notes.end())
      t.notes.push_back(f.note);
  }
  if (t.rows.empty()) return {};
  return render_markdown(t) + "\n";
}

}  // namespace fa4sim
