// npy.cpp: the strict .npy reader/writer declared in npy.h. The header is parsed by a small
// recursive-descent parser for the subset of Python literals numpy writes (a dict of strings,
// booleans and a tuple of integers); nothing is evaluated.
#include "fa4sim/util/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Largest element count we accept: keeps count * item_size far from uint64 overflow.
constexpr uint64_t kMaxElements = uint64_t{1} << 48;
constexpr const char* kSaveHint =
    "write it with numpy.save(path, array) from a float32, float16 or uint16 (bfloat16 bits) array";

// Printable rendering of untrusted header text for error messages.
std::string printable(const std::string& s, size_t max_len = 40) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max_len; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

[[noreturn]] void fail(const std::string& name, const std::string& what,
                       const std::string& hint = kSaveHint) {
  throw Error(fmt::format("'{}' is not a valid .npy file: {}", name, what), hint);
}

// fp16 (IEEE binary16) bits -> float32, exact. Truth table by exponent field e (5 bits):
//   e = 0, m = 0  -> +-0;   e = 0, m != 0 -> subnormal m * 2^-24;
//   e = 31, m = 0 -> +-inf; e = 31, m != 0 -> NaN (payload kept in the top mantissa bits);
//   otherwise     -> normal (1 + m/1024) * 2^(e-15): rebias the exponent by 127 - 15 = 112.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  uint32_t bits;
  if (e == 0) {
    // m * 2^-24 is exact in float32 (m < 2^10).
    float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    uint32_t vb;
    std::memcpy(&vb, &v, sizeof vb);
    bits = sign | vb;
  } else if (e == 31) {
    bits = sign | 0x7F800000u | (m << 13);
  } else {
    bits = sign | ((e + 112u) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ---- header parser
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    skip_ws();
    expect('{', "the header must be a Python dict starting with '{'");
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string();
      skip_ws();
      expect(':', fmt::format("expected ':' after key '{}'", printable(key)));
      skip_ws();
      if (key == "descr") {
        if (seen_descr) fail(name_, "header has the key 'descr' twice");
        seen_descr = true;
        if (peek() != '\'' && peek() != '"')
          fail(name_,
               "'descr' must be a type string such as '<f4' (structured dtypes are not supported)");
        h.descr = parse_string();
      } else if (key == "fortran_order") {
        if (seen_fortran) fail(name_, "header has the key 'fortran_order' twice");
        seen_fortran = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (seen_shape) fail(name_, "header has the key 'shape' twice");
        seen_shape = true;
        h.shape = parse_shape();
      } else {
        fail(name_, fmt::format("header has an unexpected key '{}'", printable(key)));
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        fail(name_, fmt::format("expected ',' or '}}' in the header at byte {}", pos_));
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size())
      fail(name_,
           fmt::format("unexpected text after the header dict: '{}'", printable(s_.substr(pos_))));
    if (!seen_descr || !seen_fortran || !seen_shape)
      fail(name_,
           fmt::format("header lacks the key(s){}{}{}", seen_descr ? "" : " 'descr'",
                       seen_fortran ? "" : " 'fortran_order'", seen_shape ? "" : " 'shape'"));
    return h;
  }

 private:
  int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c, const std::string& what) {
    if (peek() != static_cast<unsigned char>(c)) fail(name_, what);
    ++pos_;
  }
  std::string parse_string() {
    const int q = peek();
    if (q != '\'' && q != '"')
      fail(name_, fmt::format("expected a quoted string in the header at byte {}", pos_));
    ++pos_;
    std::string out;
    while (true) {
      const int c = peek();
      if (c < 0) fail(name_, "unterminated string in the header");
      ++pos_;
      if (c == q) break;
      if (c == '\\' || c < 0x20)
        fail(name_, "escape sequences and control characters are not allowed in header strings");
      out += static_cast<char>(c);
    }
    return out;
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail(name_, "'fortran_order' must be True or False");
  }
  uint64_t parse_uint() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const auto d = static_cast<uint64_t>(peek() - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10)
        fail(name_, "a dimension in 'shape' is too large");
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ == start)
      fail(name_, fmt::format("'shape' must be a tuple of non-negative integers, found '{}'",
                              printable(s_.substr(pos_, 12))));
    if (pos_ - start > 1 && s_[start] == '0')
      fail(name_, "a dimension in 'shape' has a leading zero");
    return v;
  }
  std::vector<uint64_t> parse_shape() {
    expect('(', "'shape' must be a tuple such as (2, 3)");
    std::vector<uint64_t> shape;
    skip_ws();
    bool trailing_comma = false;
    while (peek() != ')') {
      if (shape.size() >= 32) fail(name_, "'shape' has more than 32 dimensions");
      shape.push_back(parse_uint());
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (peek() != ')') {
        fail(name_, "expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    // Python: "(3)" is the integer 3, not a tuple.
    if (shape.size() == 1 && !trailing_comma)
      fail(name_, "'shape' (n) is an integer, not a tuple: a 1-D shape is written (n,)");
    return shape;
  }

  const std::string& s_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

size_t type_size(NpyType t) { return t == NpyType::f32 ? 4 : (t == NpyType::u8 ? 1 : 2); }

const char* type_descr(NpyType t) {
  switch (t) {
    case NpyType::f32: return "<f4";
    case NpyType::f16: return "<f2";
    case NpyType::u16: return "<u2";
    case NpyType::u8: return "|u1";
  }
  return "?";
}

// An element type fa4sim does not read; read_npy_2d_f32 rewords it (it takes float32 only).
struct UnreadableType : Error {
  UnreadableType(std::string what, std::string hint, std::string descr)
      : Error(std::move(what), std::move(hint)), descr(std::move(descr)) {}
  std::string descr;
};

NpyType descr_to_type(const std::string& descr, const std::string& name, bool allow_u8) {
  if (descr == "<f4") return NpyType::f32;
  if (descr == "<f2") return NpyType::f16;
  if (descr == "<u2") return NpyType::u16;
  if (allow_u8 && (descr == "|u1" || descr == "<u1")) return NpyType::u8;
  if (descr.size() >= 2 && descr[0] == '>')
    throw Error(fmt::format("'{}' holds big-endian data ('{}'); fa4sim reads little-endian only",
                            name, printable(descr)),
                "convert with array.astype(array.dtype.newbyteorder('<')) before numpy.save");
  throw UnreadableType(
      fmt::format("'{}' has element type '{}'; fa4sim reads '<f4' (float32), '<f2' "
                  "(float16) and '<u2' (bfloat16 bits)",
                  name, printable(descr)),
      "convert with array.astype(numpy.float32), or save bfloat16 as "
      "array.view(numpy.uint16)",
      printable(descr));
}

}  // namespace

const char* npy_type_name(NpyType t) {
  switch (t) {
    case NpyType::f32: return "float32";
    case NpyType::f16: return "float16";
    case NpyType::u16: return "uint16";
    case NpyType::u8: return "uint8";
  }
  return "?";
}

uint64_t NpyArray::size() const {
  uint64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

size_t NpyArray::item_size() const { return type_size(type); }

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string NpyArray::shape_string() const { return fa4sim::shape_string(shape); }

float NpyArray::value(uint64_t i, bool u16_is_bf16) const {
  const uint8_t* p = raw.data() + i * item_size();
  switch (type) {
    case NpyType::f32: {
      const uint32_t b = read_le(p, 4);
      float f;
      std::memcpy(&f, &b, sizeof f);
      return f;
    }
    case NpyType::f16: return f16_to_f32(static_cast<uint16_t>(read_le(p, 2)));
    case NpyType::u8: return static_cast<float>(p[0]);
    case NpyType::u16: {
      const uint32_t b = read_le(p, 2);
      if (!u16_is_bf16) return static_cast<float>(b);
      const uint32_t fb = b << 16;  // bf16 is the top half of a float32
      float f;
      std::memcpy(&f, &fb, sizeof f);
      return f;
    }
  }
  return 0.0f;
}

std::vector<float> NpyArray::to_float32(bool u16_is_bf16) const {
  const uint64_t n = size();
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = value(i, u16_is_bf16);
  return out;
}

NpyArray parse_npy(const uint8_t* data, size_t size, const std::string& name, bool allow_u8) {
  if (size < kMagicLen + 2 || std::memcmp(data, kMagic, kMagicLen) != 0)
    fail(name, "it does not start with the .npy magic \\x93NUMPY");
  const int major = data[6], minor = data[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(name,
         fmt::format("unsupported .npy format version {}.{} (known: 1.0, 2.0, 3.0)", major, minor));
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicLen + 2 + len_bytes;
  if (size < prefix) fail(name, "the file ends inside the header length field (truncated)");
  const uint64_t header_len = read_le(data + kMagicLen + 2, len_bytes);
  if (header_len == 0) fail(name, "the header is empty");
  if (header_len > size - prefix)
    fail(name, fmt::format("the header claims {} bytes but the file has only {} after the prefix "
                           "(truncated)",
                           header_len, size - prefix));
  const std::string text(reinterpret_cast<const char*>(data + prefix), header_len);
  if (text.find('\0') != std::string::npos) fail(name, "the header contains a NUL byte");

  const Header h = HeaderParser(text, name).parse();
  NpyArray a;
  a.version_major = major;
  a.descr = h.descr;
  a.type = descr_to_type(h.descr, name, allow_u8);
  a.fortran_order = h.fortran_order;
  a.shape = h.shape;

  uint64_t count = 1;
  for (auto d : a.shape) {
    if (d != 0 && count > kMaxElements / d)
      fail(name, fmt::format("shape {} has too many elements", a.shape_string()));
    count *= d;
  }
  const uint64_t want = count * a.item_size();
  const uint64_t have = size - prefix - header_len;
  if (have < want)
    fail(name,
         fmt::format("the data are truncated: shape {} of {} needs {} bytes, the file has {}",
                     a.shape_string(), npy_type_name(a.type), want, have),
         "the file was cut short; write it again");
  if (have > want)
    fail(name,
         fmt::format("{} unexpected bytes after the data of shape {} of {}", have - want,
                     a.shape_string(), npy_type_name(a.type)),
         "the header and the data disagree; write the file again with numpy.save");

  const uint8_t* src = data + prefix + header_len;
  a.raw.resize(want);
  if (!a.fortran_order || a.shape.size() < 2) {
    if (want) std::memcpy(a.raw.data(), src, want);
    return a;
  }
  // Fortran order: the first index varies fastest. Walk the C-order multi-index and gather.
  const size_t r = a.shape.size(), isz = a.item_size();
  std::vector<uint64_t> idx(r, 0), fstride(r, 1);
  for (size_t k = 1; k < r; ++k) fstride[k] = fstride[k - 1] * a.shape[k - 1];
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += idx[k] * fstride[k];
    std::memcpy(a.raw.data() + i * isz, src + off * isz, isz);
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < a.shape[k]) break;
      idx[k] = 0;
    }
  }
  return a;
}

NpyArray read_npy(const std::string& path, bool allow_u8) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("cannot read '{}': it is a directory", path), "give a .npy file");
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(fmt::format("cannot read '{}': not a regular file", path),
                "give a .npy file (fa4sim reads it twice: headers first, then the data)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot open '{}'", path), "check the path and permissions");
  f.seekg(0, std::ios::end);
  const auto end = f.tellg();
  if (end < 0) throw Error(fmt::format("cannot read '{}'", path), "is it a regular file?");
  f.seekg(0, std::ios::beg);
  std::vector<uint8_t> buf(static_cast<size_t>(end));
  if (!buf.empty() &&
      !f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size())))
    throw Error(fmt::format("cannot read '{}'", path), "is it a regular file?");
  return parse_npy(buf.data(), buf.size(), path, allow_u8);
}

NpyArray read_npy_2d_f32(const std::string& path) {
  NpyArray a;
  try {
    a = read_npy(path);
  } catch (const UnreadableType& e) {  // list only what this reader takes
    throw Error(fmt::format("'{}' has element type '{}'; expected float32 ('<f4')", path, e.descr),
                "convert with array.astype(numpy.float32)");
  }
  if (a.type != NpyType::f32)
    throw Error(fmt::format("'{}' holds {} ('{}'), expected float32 ('<f4')", path,
                            npy_type_name(a.type), a.descr),
                "convert with array.astype(numpy.float32)");
  if (a.shape.size() != 2)
    throw Error(fmt::format("'{}' has shape {}, expected a 2-D array (rows, columns)", path,
                            a.shape_string()),
                "reshape it to (rows, columns) before numpy.save");
  return a;
}

std::vector<uint8_t> encode_npy(NpyType type, const std::vector<uint64_t>& shape, const void* raw,
                                size_t raw_bytes, bool fortran_order) {
  uint64_t count = 1;
  for (auto d : shape) count *= d;
  if (count * type_size(type) != raw_bytes)
    throw Error(fmt::format("write_npy: {} bytes given for {} elements of {}", raw_bytes, count,
                            npy_type_name(type)));
  std::string shape_s = "(";
  for (size_t i = 0; i < shape.size(); ++i) shape_s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  if (shape.size() == 1) shape_s += ",";
  shape_s += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
                                   type_descr(type), fortran_order ? "True" : "False", shape_s);
  // Pad with spaces so that magic + version + length + header (ending in '\n') is a multiple of 64.
  const size_t unpadded = kMagicLen + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) throw Error("write_npy: header too long for format 1.0");
  std::vector<uint8_t> out(kMagic, kMagic + kMagicLen);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(header.size() & 0xFF));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const auto* p = static_cast<const uint8_t*>(raw);
  out.insert(out.end(), p, p + raw_bytes);  // little-endian host (x86-64)
  return out;
}

void write_npy(const std::string& path, NpyType type, const std::vector<uint64_t>& shape,
               const void* raw, size_t raw_bytes, bool fortran_order) {
  const auto bytes = encode_npy(type, shape, raw, raw_bytes, fortran_order);
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

void write_npy_f32(const std::string& path, const std::vector<uint64_t>& shape,
                   const std::vector<float>& data) {
  write_npy(path, NpyType::f32, shape, data.data(), data.size() * sizeof(float));
}

}  // namespace fa4sim
