// mufu.cpp: the measured MUFU tables behind include/fa4sim/core/mufu.h: read once from
// data/mufu/{rcp,ex2,lg2}_approx_ftz.bin and checked against their .json sidecars (written by
// scripts/datagen/mufu_table.py with the provenance of the GPU runs). The ex2 and lg2 tables hold
// deltas from the libm functions; they are rebuilt here and the rebuilt results' bit sums checked
// against the hardware's. Any doubt about a table is an error naming the file and the rebuild
// command: no model ever falls back to 1/x, exp2 or log2. The rebuilt tables are kept in a cache
// folder for the next process (Note [MUFU table cache] in mufu.h).
#include "fa4sim/core/mufu.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/util/parallel.h"
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
// Slicing by 8 (eight bytes per step through eight derived tables; the same CRC as the byte-wise
// loop, about 4x faster on the 13 MB of tables every process that loads them checks).
uint32_t crc32_ieee(const uint8_t* data, size_t n) {
  static const std::array<std::array<uint32_t, 256>, 8> kTable = [] {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFFu];
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint32_t lo = c ^ (uint32_t(data[i]) | uint32_t(data[i + 1]) << 8 |
                             uint32_t(data[i + 2]) << 16 | uint32_t(data[i + 3]) << 24);
    c = kTable[7][lo & 0xFFu] ^ kTable[6][(lo >> 8) & 0xFFu] ^ kTable[5][(lo >> 16) & 0xFFu] ^
        kTable[4][lo >> 24] ^ kTable[3][data[i + 4]] ^ kTable[2][data[i + 5]] ^
        kTable[1][data[i + 6]] ^ kTable[0][data[i + 7]];
  }
  for (; i < n; ++i) c = kTable[0][(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string rcp_table_path() { return data_dir() + "/mufu/rcp_approx_ftz.bin"; }

namespace {

// A table file and its sidecar, read; the size checked when `want_bytes` is not 0.
struct TableFile {
  std::vector<uint8_t> bytes;
  json meta;
  std::string side;
};

TableFile read_table_file(const std::string& bin_path, size_t want_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(bin_path, ec)) refuse(bin_path, "missing");
  TableFile t;
  std::ifstream f(bin_path, std::ios::binary | std::ios::ate);
  const std::streamoff size = f ? static_cast<std::streamoff>(f.tellg()) : -1;
  if (size < 0) refuse(bin_path, "cannot be read");
  t.bytes.resize(static_cast<size_t>(size));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(t.bytes.data()), size);
  if (f.gcount() != size) refuse(bin_path, "cannot be read");
  if (want_bytes != 0 && t.bytes.size() != want_bytes)
    refuse(bin_path, fmt::format("{} bytes, expected {}", t.bytes.size(), want_bytes));
  t.side = bin_path.substr(0, bin_path.size() - 4) + ".json";
  try {
    t.meta = read_json_input(t.side, "MUFU table sidecar");
  } catch (const Error& e) {
    refuse(bin_path, fmt::format("its sidecar: {}", e.what()));
  }
  return t;
}

const json& field(const TableFile& t, const std::string& bin_path, const char* k) {
  if (!t.meta.is_object() || !t.meta.contains(k))
    refuse(bin_path, fmt::format("sidecar '{}' has no '{}'", t.side, k));
  return t.meta.at(k);
}

void check_crc(const TableFile& t, const std::string& bin_path) {
  const json& c = field(t, bin_path, "crc32");
  const std::string want = c.is_string() ? c.get<std::string>() : "";
  const std::string got = fmt::format("{:08x}", crc32_ieee(t.bytes.data(), t.bytes.size()));
  if (got != want)
    refuse(bin_path, fmt::format("CRC-32 {} != {} in '{}': damaged", got, want, t.side));
}

}  // namespace

void load_rcp_table(const std::string& bin_path, std::vector<uint8_t>& out) {
  TableFile t = read_table_file(bin_path, kRcpTableBytes);
  const auto f = [&](const char* k) -> const json& { return field(t, bin_path, k); };
  if (f("format") != kTableFormat || f("unit") != "rcp.approx.ftz.f32" ||
      f("entries") != kRcpTableEntries || f("bits_per_entry") != 2)
    refuse(bin_path,
           fmt::format("sidecar '{}' does not describe a {} rcp.approx.ftz.f32 table of 2^23 "
                       "2-bit entries",
                       t.side, kTableFormat));
  check_crc(t, bin_path);
  for (uint32_t i = 0; i < kRcpTableBytes; ++i)
    for (int k = 0; k < 4; ++k)
      if (((t.bytes[i] >> (2 * k)) & 3u) == 3u)
        refuse(bin_path, fmt::format("entry {} holds the unused code 3", 4 * i + uint32_t(k)));
  out = std::move(t.bytes);
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

// ---- ex2 and lg2: decode, rebuild from the libm functions, check the hardware's bit sums

namespace {

constexpr uint64_t kRebuildChunk = uint64_t(1) << 18;

void check_header(const TableFile& t, const std::string& bin_path, const char* format,
                  const char* unit) {
  if (field(t, bin_path, "format") != format || field(t, bin_path, "unit") != unit ||
      field(t, bin_path, "entries") != kMufuTableEntries)
    refuse(bin_path, fmt::format("sidecar '{}' does not describe a {} {} table of 2^23 entries",
                                 t.side, format, unit));
}

// The hardware's sum of a table's bit patterns, from the sidecar's hardware_bit_sums.
uint64_t hardware_sum(const TableFile& t, const std::string& bin_path, const char* table) {
  const json& sums = field(t, bin_path, "hardware_bit_sums");
  if (!sums.is_object() || !sums.contains(table) || !sums.at(table).is_number_unsigned())
    refuse(bin_path, fmt::format("sidecar '{}' has no hardware_bit_sums.{}", t.side, table));
  return sums.at(table).get<uint64_t>();
}

// The 32 MiB of a table are allocated, then asked for 2 MiB pages (transparent huge pages, where
// the kernel offers them with `madvise`) before the first write: with 4 KiB pages the kernel's
// page faults and page clearing were about a third of a load's CPU time, and every CLI run that
// uses the MUFU model loads two or three tables. Only an advice: refused, the pages stay small and
// nothing else changes (the entries are the same whatever the page size).
void advise_huge_pages(std::vector<float>& out) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t(1) << 21;
  const auto first = reinterpret_cast<uintptr_t>(out.data());
  const uintptr_t b = (first + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (first + out.capacity() * sizeof(float)) & ~(kHuge - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
#else
  (void)out;
#endif
}

// Fills out[b, e) by fill(b, e, out.data()) in chunks of 2^18 on `threads` threads; returns the
// sum of the bit patterns (mod 2^64, what the GPU summed). `nan` (when given) is set when an entry
// is a NaN.
// A fresh allocation of 2^23 zeros (asked for huge pages before the first write).
void fresh_table(std::vector<float>& out) {
  std::vector<float>().swap(out);
  out.reserve(kMufuTableEntries);
  advise_huge_pages(out);
  out.assign(kMufuTableEntries, 0.0f);
}

template <typename F>
uint64_t rebuild(std::vector<float>& out, int threads, F&& fill, bool* nan = nullptr) {
  fresh_table(out);
  std::vector<uint64_t> sums(chunk_count(kMufuTableEntries, kRebuildChunk), 0);
  std::vector<uint8_t> nans(sums.size(), 0);
  parallel_chunks(kMufuTableEntries, kRebuildChunk, threads,
                  [&](uint64_t c, uint64_t b, uint64_t e) {
                    fill(b, e, out.data());
                    uint64_t s = 0;
                    bool any_nan = false;
                    for (uint64_t j = b; j < e; ++j) {
                      s += f32_bits(out[j]);
                      any_nan |= std::isnan(out[j]);
                    }
                    sums[c] = s;
                    nans[c] = any_nan;
                  });
  uint64_t total = 0;
  for (size_t c = 0; c < sums.size(); ++c) {
    total += sums[c];
    if (nan != nullptr && nans[c]) *nan = true;
  }
  return total;
}

void check_sum(const std::string& bin_path, const char* table, const char* fn, uint64_t got,
               uint64_t want) {
  if (got != want)
    refuse(bin_path,
           fmt::format("the rebuilt {} table's bit sum {} != {} measured on the GPU: the table is "
                       "damaged, or this machine's std::{} rounds differently from the libm the "
                       "table was built against",
                       table, got, want, fn));
}

// Ordered integer of a float32 bit pattern (b < 2^31 ? b : -(b - 2^31)), and back.
int64_t ordered_of(uint32_t b) {
  return (b & 0x80000000u) ? -int64_t(b & 0x7FFFFFFFu) : int64_t(b);
}

// Whether finite v is a multiple of 2^-kLg2FixedBits (integer ops: v = sig 2^p, a multiple when p
// >= -36 or sig's trailing zeros make up the difference).
bool on_lg2_grid(float v) {
  const uint32_t b = f32_bits(v) & 0x7FFFFFFFu, f = b >> 23;
  const uint32_t sig = f ? (b & 0x007FFFFFu) | 0x00800000u : b;
  const int p = (f ? int(f) : 1) - 150;
  return sig == 0 || p + kLg2FixedBits >= 0 || std::countr_zero(sig) >= -(p + kLg2FixedBits);
}

constexpr uint32_t kLg2Block = 64;  // entries per block of the lg2 streams

// One lg2 table's block stream starting at byte `at` (see mufu_table.py): the byte offset of each
// block's width byte; `at` moves past the stream. Refuses a width over 32 or a stream that runs
// past the end.
std::vector<size_t> block_offsets(const std::vector<uint8_t>& bytes, size_t& at,
                                  const std::string& bin_path, const char* table) {
  std::vector<size_t> off(kMufuTableEntries / kLg2Block);
  for (uint32_t blk = 0; blk < kMufuTableEntries / kLg2Block; ++blk) {
    if (at >= bytes.size()) refuse(bin_path, fmt::format("{} ends in block {}", table, blk));
    off[blk] = at;
    const uint32_t w = bytes[at++];
    if (w > 32 || at + 8 * size_t(w) > bytes.size())
      refuse(bin_path,
             fmt::format("{} block {}: width {} (0..32, within the file)", table, blk, w));
    at += 8 * size_t(w);
  }
  return off;
}

// The zigzag-decoded deltas of the block whose width byte is at `p` (checked by block_offsets):
// 64 fields of w bits, from the low bits of each byte up. |delta| <= 2^31 fits int64_t.
void decode_block(const uint8_t* p, int64_t* d) {
  const uint32_t w = *p++;
  const uint64_t mask = w ? (uint64_t(1) << w) - 1 : 0;
  uint64_t buf = 0;  // the unread bits, lowest first (at most 39)
  uint32_t have = 0;
  for (uint32_t k = 0; k < kLg2Block; ++k) {
    for (; have < w; have += 8) buf |= uint64_t(*p++) << have;
    const uint64_t z = buf & mask;
    buf >>= w;
    have -= w;
    d[k] = (z & 1u) ? -int64_t((z + 1) / 2) : int64_t(z / 2);
  }
}

// ---- the cache of rebuilt tables (Note [MUFU table cache] in mufu.h)

#ifndef FA4SIM_MUFU_SOURCE_HASH  // set by CMakeLists.txt: a hash of this file and mufu.h
#define FA4SIM_MUFU_SOURCE_HASH "unhashed"
#endif

constexpr char kCacheMagic[16] = "fa4sim-mufu-c2";

// A 64-bit hash of n bytes, continuing from h (hash64(b, hash64(a, h)) covers a, then b): four
// lanes of xor, multiply by an odd constant and xor-shift over 8-byte words, then the tail bytes.
// Each step is a bijection of its lane, so any change of one word changes the result; the
// checksum of a cache file and the cache key.
// `words`, when given, receives the sum of the data's 32-bit little-endian words (mod 2^64) over
// its whole 32-byte blocks, read in the same pass (a table's bit sum: map_cache reads the 64 MiB of
// a cache entry once instead of twice).
uint64_t hash64(const void* data, size_t n, uint64_t h, uint64_t* words = nullptr) {
  constexpr uint64_t kM = 0x9E3779B97F4A7C15u;
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t lane[4] = {h ^ 0x243F6A8885A308D3u, h ^ 0x13198A2E03707344u, h ^ 0xA4093822299F31D0u,
                      h ^ 0x082EFA98EC4E6C89u};
  uint64_t lo = 0, hi = 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * size_t(k), 8);
      lo += w & 0xFFFFFFFFu;
      hi += w >> 32;
      lane[k] = (lane[k] ^ w) * kM;
      lane[k] ^= lane[k] >> 29;
    }
  if (words != nullptr) *words = lo + hi;
  uint64_t r = uint64_t(n) * kM;
  for (uint64_t l : lane) {
    r = (r ^ l) * kM;
    r ^= r >> 32;
  }
  for (; i < n; ++i) {
    r = (r ^ p[i]) * kM;
    r ^= r >> 29;
  }
  return r;
}

uint64_t bit_sum(const std::vector<float>& v) {
  uint64_t s = 0;
  for (float x : v) s += f32_bits(x);
  return s;
}

// A unit's cache entry: its file ("" = no cache folder) and what it must hold: the key, and the
// code's tag, the input table and its sidecar, byte for byte.
struct CacheEntry {
  std::string path, unit;
  uint64_t key = 0;
  std::vector<uint8_t> input;
};

struct CacheHeader {
  char magic[16];
  uint64_t key, input_bytes, entries;
};

// A cache file: the header, the input (CacheEntry::input), zero bytes up to the next multiple of
// 64 from the file's start, the two tables of 2^23 floats, and the checksum (hash64 over all that
// precedes it). The padding puts the tables where a mapping of the file holds aligned floats.
constexpr size_t kCacheAlign = 64;
size_t cache_padding(const CacheEntry& c) {
  const size_t at = sizeof(CacheHeader) + c.input.size();
  return (kCacheAlign - at % kCacheAlign) % kCacheAlign;
}
constexpr std::array<uint8_t, kCacheAlign> kZeros{};

void append_blob(std::vector<uint8_t>& out, const void* p, size_t n) {
  const uint64_t len = n;
  const auto* b = reinterpret_cast<const uint8_t*>(&len);
  out.insert(out.end(), b, b + sizeof len);
  out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}

CacheEntry cache_entry(const char* unit, const TableFile& t) {
  CacheEntry c;
  const std::string dir = mufu_cache_dir();
  if (dir.empty()) return c;
  std::ifstream f(t.side, std::ios::binary);
  const std::string side((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return c;
#if defined(__GLIBC__)
  const char* libc = gnu_get_libc_version();
#else
  const char* libc = "not glibc";
#endif
  // The libm the tables were rebuilt with (std::exp2, std::log2) is part of the key: a cache
  // folder shared by two machines keeps one entry per C library.
  const std::string tag =
      fmt::format("{} {} {} libc {}", kCacheMagic, unit, FA4SIM_MUFU_SOURCE_HASH, libc);
  append_blob(c.input, tag.data(), tag.size());
  append_blob(c.input, t.bytes.data(), t.bytes.size());
  append_blob(c.input, side.data(), side.size());
  c.key = hash64(c.input.data(), c.input.size(), 0);
  c.path = fmt::format("{}/mufu-{}-{:016x}.bin", dir, unit, c.key);
  c.unit = unit;
  return c;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Whether the entry's file holds tables for exactly this input, intact (out then holds them;
// otherwise out holds anything and the caller rebuilds).
bool read_cache(const CacheEntry& c, MufuTables& out) {
  if (c.path.empty()) return false;
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(c.path.c_str(), "rb"));
  if (!f) return false;
  CacheHeader h{};
  if (std::fread(&h, sizeof h, 1, f.get()) != 1 || std::memcmp(h.magic, kCacheMagic, 16) != 0 ||
      h.key != c.key || h.input_bytes != c.input.size() || h.entries != kMufuTableEntries)
    return false;
  std::vector<uint8_t> input(c.input.size());
  if (std::fread(input.data(), 1, input.size(), f.get()) != input.size() || input != c.input)
    return false;
  std::array<uint8_t, kCacheAlign> pad{};
  const size_t npad = cache_padding(c);
  if (std::fread(pad.data(), 1, npad, f.get()) != npad || pad != kZeros) return false;
  uint64_t sum =
      hash64(pad.data(), npad, hash64(input.data(), input.size(), hash64(&h, sizeof h, 0)));
  for (auto* v : {&out.a, &out.b}) {
    fresh_table(*v);
    if (std::fread(v->data(), sizeof(float), v->size(), f.get()) != v->size()) return false;
    sum = hash64(v->data(), v->size() * sizeof(float), sum);
  }
  uint64_t want = 0;
  return std::fread(&want, sizeof want, 1, f.get()) == 1 && want == sum &&
         std::fgetc(f.get()) == EOF;
}

// map_cached_*_table (mufu.h): the entry's file mapped read-only for the rest of the process
// instead of read into fresh memory. The same checks as read_cache: the size, header, input bytes,
// padding and checksum, and the tables' bit sums (`want_a`, `want_b`, the hardware's). False, with
// nothing kept mapped, when any fails or the system has no mmap.
bool map_cache(const CacheEntry& c, uint64_t want_a, uint64_t want_b, const float** a,
               const float** b) {
#if defined(__linux__)
  if (c.path.empty()) return false;
  constexpr size_t kTable = size_t(kMufuTableEntries) * sizeof(float);
  const size_t at = sizeof(CacheHeader) + c.input.size() + cache_padding(c);
  const size_t size = at + 2 * kTable + sizeof(uint64_t);
  const int fd = ::open(c.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  void* m = ::fstat(fd, &st) == 0 && uint64_t(st.st_size) == size
                ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
                : MAP_FAILED;
  ::close(fd);
  if (m == MAP_FAILED) return false;
  const auto* p = static_cast<const uint8_t*>(m);
  CacheHeader h{};
  std::memcpy(&h, p, sizeof h);
  const auto* ta = reinterpret_cast<const float*>(p + at);
  const auto* tb = reinterpret_cast<const float*>(p + at + kTable);
  static_assert(kTable % 32 == 0, "hash64 sums a table's words whole");
  uint64_t want = 0, sum_a = 0, sum_b = 0;
  std::memcpy(&want, p + at + 2 * kTable, sizeof want);
  const bool ok =
      std::memcmp(h.magic, kCacheMagic, 16) == 0 && h.key == c.key &&
      h.input_bytes == c.input.size() && h.entries == kMufuTableEntries &&
      std::memcmp(p + sizeof h, c.input.data(), c.input.size()) == 0 &&
      std::memcmp(p + sizeof h + c.input.size(), kZeros.data(), at - sizeof h - c.input.size()) ==
          0 &&
      hash64(tb, kTable,
             hash64(ta, kTable,
                    hash64(p + sizeof h + c.input.size(), at - sizeof h - c.input.size(),
                           hash64(p + sizeof h, c.input.size(), hash64(&h, sizeof h, 0))),
                    &sum_a),
             &sum_b) == want &&
      sum_a == want_a && sum_b == want_b;
  if (!ok) {
    ::munmap(m, size);
    return false;
  }
  *a = ta;
  *b = tb;
  return true;
#else
  (void)c, (void)want_a, (void)want_b, (void)a, (void)b;
  return false;
#endif
}

// Writes the entry (to a temporary file in the folder, renamed into place); any failure leaves
// the cache as it was and is not reported.
void write_cache(const CacheEntry& c, const MufuTables& t) {
  if (c.path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(c.path).parent_path(), ec);
  const std::string tmp = fmt::format(
      "{}.{:016x}.tmp", c.path, std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32));
  bool ok = false;
  {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(tmp.c_str(), "wbx"));
    if (!f) return;
    CacheHeader h{};
    std::memcpy(h.magic, kCacheMagic, 16);
    h.key = c.key;
    h.input_bytes = c.input.size();
    h.entries = kMufuTableEntries;
    const size_t npad = cache_padding(c);
    uint64_t sum = hash64(kZeros.data(), npad,
                          hash64(c.input.data(), c.input.size(), hash64(&h, sizeof h, 0)));
    ok = std::fwrite(&h, sizeof h, 1, f.get()) == 1 &&
         std::fwrite(c.input.data(), 1, c.input.size(), f.get()) == c.input.size() &&
         std::fwrite(kZeros.data(), 1, npad, f.get()) == npad;
    for (const auto* v : {&t.a, &t.b}) {
      ok = ok && std::fwrite(v->data(), sizeof(float), v->size(), f.get()) == v->size();
      sum = hash64(v->data(), v->size() * sizeof(float), sum);
    }
    ok = ok && std::fwrite(&sum, sizeof sum, 1, f.get()) == 1;
    ok = std::fclose(f.release()) == 0 && ok;
  }
  if (!ok || std::rename(tmp.c_str(), c.path.c_str()) != 0) {
    std::filesystem::remove(tmp, ec);
    return;
  }
  // One entry per unit: the unit's other entries (other sources or inputs) are removed, so that
  // the folder does not grow by 70 MiB with every edit.
  const std::string prefix = fmt::format("mufu-{}-", c.unit);
  const std::string mine = std::filesystem::path(c.path).filename().string();
  try {
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(c.path).parent_path(), ec)) {
      const std::string n = e.path().filename().string();
      if (n != mine && n.size() == mine.size() && n.rfind(prefix, 0) == 0 && n.ends_with(".bin"))
        std::filesystem::remove(e.path(), ec);
    }
  } catch (const std::exception&) {  // a folder changing under the iterator: left as it is
  }
}

}  // namespace

std::string mufu_cache_dir() {
  const auto env = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v != nullptr ? v : "";
  };
  if (std::string d = env("FA4SIM_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/fa4sim";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/fa4sim";
  return "";
}

std::string ex2_table_path() { return data_dir() + "/mufu/ex2_approx_ftz.bin"; }
std::string lg2_table_path() { return data_dir() + "/mufu/lg2_approx_ftz.bin"; }

namespace {

constexpr size_t kEx2Half = kMufuTableEntries / 4;  // bytes of one ex2 table: 2 bits per entry

// The ex2 input, read and checked: everything load_ex2_table refuses before it rebuilds.
TableFile ex2_input(const std::string& bin_path) {
  TableFile t = read_table_file(bin_path, 2 * kEx2Half);
  check_header(t, bin_path, "fa4sim/mufu-ex2-table-v1", "ex2.approx.ftz.f32");
  if (field(t, bin_path, "bits_per_entry") != 2 ||
      field(t, bin_path, "code_offset") != json{{"positive", 1}, {"negative", 2}})
    refuse(bin_path, fmt::format("sidecar '{}': not 2-bit codes with offsets 1 and 2", t.side));
  check_crc(t, bin_path);
  // A byte holds a code 3 (both bits of a field set) when v & v >> 1 has a field's low bit set;
  // the first such entry is named, as an entry-by-entry scan would.
  for (uint32_t i = 0; i < kEx2Half; ++i)
    if ((t.bytes[i] & (t.bytes[i] >> 1) & 0x55u) != 0)
      for (uint32_t j = 4 * i;; ++j)
        if (rcp_table_delta(t.bytes.data(), j) == 2)
          refuse(bin_path, fmt::format("positive entry {} holds the unused code 3", j));
  return t;
}

// The lg2 input, read and checked, and the byte offsets of its two block streams.
struct Lg2Input {
  TableFile t;
  std::vector<size_t> b0, b1;
};

Lg2Input lg2_input(const std::string& bin_path) {
  Lg2Input in{read_table_file(bin_path, 0), {}, {}};
  const TableFile& t = in.t;
  check_header(t, bin_path, "fa4sim/mufu-lg2-table-v1", "lg2.approx.ftz.f32");
  const json& bytes = field(t, bin_path, "bytes");
  if (field(t, bin_path, "block_entries") != 64 || !bytes.is_number_unsigned() ||
      bytes.get<uint64_t>() != t.bytes.size())
    refuse(bin_path, fmt::format("{} bytes, expected {} (sidecar '{}'), in blocks of 64",
                                 t.bytes.size(), bytes.dump(), t.side));
  check_crc(t, bin_path);
  size_t at = 0;
  in.b0 = block_offsets(t.bytes, at, bin_path, "y0");
  in.b1 = block_offsets(t.bytes, at, bin_path, "y1");
  if (at != t.bytes.size())
    refuse(bin_path, fmt::format("{} bytes after the two tables", t.bytes.size() - at));
  return in;
}

}  // namespace

void load_ex2_table(const std::string& bin_path, MufuTables& out, int threads) {
  const TableFile t = ex2_input(bin_path);
  const uint8_t* pos = t.bytes.data();
  const uint8_t* neg = pos + kEx2Half;
  // Entry j: (float)exp2(+-j 2^-23) (the argument exact in double) plus the delta in ulps (the
  // results are positive, so bit patterns are ordered).
  // (j 2^-23 is exact in double: a multiplication by a power of two, no std::ldexp call.)
  const auto entry = [](uint32_t j, bool negative, int delta) {
    const double x = static_cast<double>(j) * 0x1p-23;
    const float r = static_cast<float>(std::exp2(negative ? -x : x));
    return f32_from_bits(static_cast<uint32_t>(static_cast<int32_t>(f32_bits(r)) + delta));
  };
  const CacheEntry cache = cache_entry("ex2", t);
  out.from_cache = read_cache(cache, out) &&
                   bit_sum(out.a) == hardware_sum(t, bin_path, "positive") &&
                   bit_sum(out.b) == hardware_sum(t, bin_path, "negative");
  if (out.from_cache) return;
  const uint64_t sp = rebuild(out.a, threads, [&](uint64_t b, uint64_t e, float* o) {
    for (uint64_t j = b; j < e; ++j)
      o[j] = entry(uint32_t(j), false, rcp_table_delta(pos, uint32_t(j)));  // code - 1
  });
  const uint64_t sn = rebuild(out.b, threads, [&](uint64_t b, uint64_t e, float* o) {
    for (uint64_t j = b; j < e; ++j)
      o[j] = entry(uint32_t(j), true, rcp_table_delta(neg, uint32_t(j)) - 1);  // code - 2
  });
  check_sum(bin_path, "positive ex2", "exp2", sp, hardware_sum(t, bin_path, "positive"));
  check_sum(bin_path, "negative ex2", "exp2", sn, hardware_sum(t, bin_path, "negative"));
  write_cache(cache, out);
}

void load_lg2_table(const std::string& bin_path, MufuTables& out, int threads) {
  const Lg2Input in = lg2_input(bin_path);
  const TableFile& t = in.t;
  const std::vector<size_t>& b0 = in.b0;
  const std::vector<size_t>& b1 = in.b1;
  // Entry j: (float)log2(x) for x = m or m / 2 (exact), as an ordered integer, plus the delta.
  // An entry that is not finite or not a multiple of 2^-36 is marked NaN and refused below.
  const auto entry = [](uint32_t j, bool half, int64_t delta) {
    const float m = f32_from_bits(0x3F800000u | j), x = half ? m * 0.5f : m;
    const int64_t o = ordered_of(f32_bits(static_cast<float>(std::log2(static_cast<double>(x)))));
    const int64_t y = o + delta;
    if (y < -int64_t(0x7F7FFFFF) || y > int64_t(0x7F7FFFFF)) return f32_from_bits(0x7FFFFFFFu);
    const float v = f32_from_bits(y < 0 ? uint32_t(-y) | 0x80000000u : uint32_t(y));
    return on_lg2_grid(v) ? v : f32_from_bits(0x7FFFFFFFu);
  };
  static_assert(kLg2FixedBits == 36 && kRebuildChunk % kLg2Block == 0);
  // Each chunk decodes its own blocks (whole blocks: the chunks are multiples of 64 entries).
  const auto table = [&](const std::vector<size_t>& offsets, bool half) {
    return [&, half](uint64_t b, uint64_t e, float* o) {
      int64_t d[kLg2Block];
      for (uint64_t blk = b / kLg2Block; blk < e / kLg2Block; ++blk) {
        decode_block(t.bytes.data() + offsets[blk], d);
        for (uint32_t k = 0; k < kLg2Block; ++k) {
          const uint32_t j = uint32_t(blk * kLg2Block + k);
          o[j] = entry(j, half, d[k]);
        }
      }
    };
  };
  const CacheEntry cache = cache_entry("lg2", t);
  out.from_cache = read_cache(cache, out) && bit_sum(out.a) == hardware_sum(t, bin_path, "y0") &&
                   bit_sum(out.b) == hardware_sum(t, bin_path, "y1");
  if (out.from_cache) return;
  bool nan = false;
  const uint64_t s0 = rebuild(out.a, threads, table(b0, false), &nan);
  const uint64_t s1 = rebuild(out.b, threads, table(b1, true), &nan);
  for (const auto* v : {&out.a, &out.b})
    for (uint32_t j = 0; nan && j < kMufuTableEntries; ++j)
      if (std::isnan((*v)[j]))
        refuse(bin_path, fmt::format("{} entry {} is not a finite multiple of 2^-36",
                                     v == &out.a ? "y0" : "y1", j));
  check_sum(bin_path, "lg2 y0", "log2", s0, hardware_sum(t, bin_path, "y0"));
  check_sum(bin_path, "lg2 y1", "log2", s1, hardware_sum(t, bin_path, "y1"));
  write_cache(cache, out);
}

bool map_cached_ex2_table(const std::string& bin_path, Ex2ApproxTable& out) {
  const TableFile t = ex2_input(bin_path);
  return map_cache(cache_entry("ex2", t), hardware_sum(t, bin_path, "positive"),
                   hardware_sum(t, bin_path, "negative"), &out.pos, &out.neg);
}

bool map_cached_lg2_table(const std::string& bin_path, Lg2ApproxTable& out) {
  const Lg2Input in = lg2_input(bin_path);
  return map_cache(cache_entry("lg2", in.t), hardware_sum(in.t, bin_path, "y0"),
                   hardware_sum(in.t, bin_path, "y1"), &out.y0, &out.y1);
}

namespace {

// One unit's tables for the process, loaded once (thread-safe static): the cache entry mapped, or
// on a miss loaded by load_*_table (rebuilt, the cache written). A failed load throws and is
// retried by the next call.
template <typename View>
struct ProcessTables {
  MufuTables owned;  // empty when mapped
  View view;
};

template <typename View, auto Map, auto Load, auto Path>
View loaded_once() {
  static const ProcessTables<View> kT = [] {
    ProcessTables<View> t;
    if (!Map(Path(), t.view)) {
      Load(Path(), t.owned, 0);
      t.view = View{t.owned.a.data(), t.owned.b.data()};  // a move of t keeps these buffers
    }
    return t;
  }();
  return kT.view;
}

}  // namespace

Ex2ApproxTable ex2_approx_table() {
  return loaded_once<Ex2ApproxTable, map_cached_ex2_table, load_ex2_table, ex2_table_path>();
}

Lg2ApproxTable lg2_approx_table() {
  return loaded_once<Lg2ApproxTable, map_cached_lg2_table, load_lg2_table, lg2_table_path>();
}

MufuHardware mufu_hardware() {
  return MufuHardware{ex2_approx_table(), lg2_approx_table(), rcp_table()};
}

float ex2_approx_ftz(float x) { return ex2_approx_ftz(x, ex2_approx_table()); }
float lg2_approx_ftz(float x) { return lg2_approx_ftz(x, lg2_approx_table()); }

}  // namespace fa4sim
