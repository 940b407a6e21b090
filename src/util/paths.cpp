#include "fa4sim/util/paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

namespace fs = std::filesystem;

std::string executable_path() {
  std::string buf(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  buf.resize(size_t(n));
  return buf;
}

namespace {
// <dir of the binary>/../share/fa4sim/<what> when it is a directory.
std::string installed(const std::string& what) {
  const std::string exe = executable_path();
  if (exe.empty()) return "";
  const fs::path p = fs::path(exe).parent_path().parent_path() / "share" / "fa4sim" / what;
  std::error_code ec;
  return fs::is_directory(p, ec) ? p.string() : "";
}

std::string& packaged_data_dir() {
  static std::string dir;
  return dir;
}
}  // namespace

void set_packaged_data_dir(std::string dir) { packaged_data_dir() = std::move(dir); }

std::string data_dir() {
  if (const char* env = std::getenv("FA4SIM_DATA_DIR"); env && *env) {
    std::error_code ec;
    if (!fs::is_directory(env, ec))
      throw Error(
          fmt::format("FA4SIM_DATA_DIR '{}' is not a directory", env),
          "point it at fa4sim's data folder (share/fa4sim/data when installed), or unset it");
    return env;
  }
  if (!packaged_data_dir().empty()) return packaged_data_dir();
  if (std::string p = installed("data"); !p.empty()) return p;
  return std::string(FA4SIM_SOURCE_DIR) + "/data";
}

bool data_from_foreign_source_tree() {
  if (const char* env = std::getenv("FA4SIM_DATA_DIR"); env && *env) return false;
  if (!packaged_data_dir().empty()) return false;
  if (!installed("data").empty()) return false;
  const std::string exe = executable_path(), src = std::string(FA4SIM_SOURCE_DIR) + "/";
  if (exe.empty() || exe.rfind(src, 0) == 0) return false;
  // A build tree outside the source tree is still a build tree (CMakeCache.txt above the binary).
  std::error_code ec;
  for (fs::path d = fs::path(exe).parent_path(); !d.empty() && d != d.root_path();
       d = d.parent_path())
    if (fs::exists(d / "CMakeCache.txt", ec)) return false;
  return true;
}

std::string drivers_dir() {
  if (std::string p = installed("drivers"); !p.empty()) return p;
  return std::string(FA4SIM_SOURCE_DIR) + "/scripts/drivers";
}

}  // namespace fa4sim
