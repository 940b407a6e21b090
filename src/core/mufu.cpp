// mufu.cpp: the measured rcp.approx.ftz.f32 table behind include/fa4sim/core/mufu.h: read once
// from data/mufu/rcp_approx_ftz.bin and checked against its .json sidecar (written by
// scripts/datagen/mufu_table.py with the provenance of the GPU run). Any doubt about the table is an
// error naming the file and the rebuild command: the model never falls back to 1/x.
#include "fa4sim/core/mufu.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/util/paths.h"

namespace fa4sim {

namespace {

constexpr const char* kTableFormat = "fa4sim/mufu-table-v1";

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw Error(fmt::format("MUFU table '{}': {}", path, what),
              fmt::format("rebuild with: {}", kRcpTableRebuild), kExitUsage);
}

}  // namespace

// CRC-32 of IEEE 802.3 (zlib's crc32, reflected polynomial 0xEDB88320), what mufu_table.py writes.
uint32_t crc32_ieee(const uint8_t* data, size_t n) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string rcp_table_path() { return data_dir() + "/mufu/rcp_approx_ftz.bin"; }

void load_rcp_table(const std::string& bin_path, std::vector<uint8_t>& out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(bin_path, ec)) refuse(bin_path, "missing");
  std::ifstream f(bin_path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) refuse(bin_path, "cannot be read");
  if (bytes.size() != kRcpTableBytes)
    refuse(bin_path, fmt::format("{} bytes, expected {}", bytes.size(), kRcpTableBytes));
  const std::string side = bin_path.substr(0, bin_path.size() - 4) + ".json";
  json meta;
  try {
    meta = read_json_input(side, "MUFU table sidecar");
  } catch (const Error& e) {
    refuse(bin_path, fmt::format("its sidecar: {}", e.what()));
  }
  const auto field = [&](const char* k) -> const json& {
    if (!meta.is_object() || !meta.contains(k))
      refuse(bin_path, fmt::format("sidecar '{}' has no '{}'", side, k));
    return meta.at(k);
  };
  if (field("format") != kTableFormat || field("unit") != "rcp.approx.ftz.f32" ||
      field("entries") != kRcpTableEntries || field("bits_per_entry") != 2)
    refuse(bin_path,
           fmt::format("sidecar '{}' does not describe a {} rcp.approx.ftz.f32 table of 2^23 "
                       "2-bit entries",
                       side, kTableFormat));
  const std::string want = field("crc32").is_string() ? field("crc32").get<std::string>() : "";
  const std::string got = fmt::format("{:08x}", crc32_ieee(bytes.data(), bytes.size()));
  if (got != want)
    refuse(bin_path, fmt::format("CRC-32 {} != {} in '{}': damaged", got, want, side));
  for (uint32_t i = 0; i < kRcpTableBytes; ++i)
    for (int k = 0; k < 4; ++k)
      if (((bytes[i] >> (2 * k)) & 3u) == 3u)
        refuse(bin_path, fmt::format("entry {} holds the unused code 3", 4 * i + uint32_t(k)));
  out = std::move(bytes);
}

const uint8_t* rcp_table() {
  // Loaded once (thread-safe static); a failed load throws and is retried by the next call.
  static const std::vector<uint8_t> kTable = [] {
    std::vector<uint8_t> t;
    load_rcp_table(rcp_table_path(), t);
    return t;
  }();
  return kTable.data();
}

float rcp_approx_ftz(float x) { return rcp_approx_ftz(x, rcp_table()); }

}  // namespace fa4sim
