// formats_report.cpp: `fa4sim formats` and `fa4sim quantize` as library functions returning a
// Report, plus the value readers and the raw encoding writer (see formats_report.h).
#include "fa4sim/analysis/formats_report.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"
#include "fa4sim/util/parallel.h"

namespace fa4sim {

json json_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

static std::string pow2_text(double v) {
  int e = 0;
  const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
  if (m == 0.5) return fmt::format("{:.9g} (2^{})", v, e - 1);
  return fmt::format("{:.9g}", v);
}

static std::string hex_bits(const Format& f, uint32_t bits) {
  return fmt::format("0x{:0{}X}", bits, (f.total_bits + 3) / 4);
}

std::string bit_fields(const Format& f, uint32_t bits) {
  std::string s;
  for (int i = f.total_bits - 1; i >= 0; --i) {
    s += ((bits >> i) & 1u) ? '1' : '0';
    if ((f.has_sign && i == f.total_bits - 1) || (i == f.man_bits && i > 0)) s += ' ';
  }
  return s;
}

// ---- formats

Report formats_table_report() {
  Report r;
  r.command = "formats";
  Table t;
  t.title = "Number formats (parameters and limits derived from them, formats.h)";
  t.columns = {"name",       "bits s/e/m",    "bias",    "max finite", "log2(max)",
               "min normal", "min subnormal", "epsilon", "inf",        "NaN (canonical)"};
  json list = json::array();
  for (const Format* f : all_formats()) {
    t.rows.push_back({f->name, fmt::format("{}/{}/{}", int(f->has_sign), f->exp_bits, f->man_bits),
                      std::to_string(f->bias),
                      fmt::format("{:.9g} ({})", f->max_finite, hex_bits(*f, f->max_code)),
                      fmt::format("{:.6f}", f->log2_max), pow2_text(f->min_normal),
                      pow2_text(f->min_subnormal), pow2_text(f->epsilon),
                      f->has_inf ? hex_bits(*f, f->inf_code) : "none",
                      f->nan_encoding == NanEncoding::none ? "none" : hex_bits(*f, f->nan_code)});
    list.push_back({{"name", f->name},
                    {"bits", f->total_bits},
                    {"exponent_bits", f->exp_bits},
                    {"mantissa_bits", f->man_bits},
                    {"bias", f->bias},
                    {"max_finite", f->max_finite},
                    {"min_normal", f->min_normal},
                    {"min_subnormal", f->min_subnormal},
                    {"epsilon", f->epsilon},
                    {"log2_max", f->log2_max},
                    {"has_inf", f->has_inf},
                    {"has_nan", f->nan_encoding != NanEncoding::none},
                    {"has_sign", f->has_sign}});
  }
  t.notes = {
      "log2(max) is the bound of FlashAttention-4's `max_offset + tau < log2(dtype_max)` check.",
      "e4m3 is OCP E4M3FN: no inf, NaN = 0x7F/0xFF. Conversions round to nearest even and keep "
      "subnormals; overflow: satfinite -> max finite (cvt.rn.satfinite), ieee -> inf (E4M3: NaN).",
      "e2m1 (FP4), e2m3, e3m2 (FP6): OCP MX elements, no inf and no NaN; satfinite only, NaN -> +max "
      "(cvt.rn.satfinite.e2m1x2.f32). e8m0: the MX scale, unsigned, 2^(code-127), 0xFF = NaN, no zero.",
  };
  r.tables.push_back(std::move(t));
  r.results["formats"] = std::move(list);
  return r;
}

// ---- quantize

QuantizedValue quantize_value(const QuantizeConfig& c, float x, uint64_t index) {
  const Format& f = *c.format;
  QuantizedValue q{};
  q.input = x;
  q.bits = c.stochastic_seed
               ? encode_sr(f, x, c.overflow, sr_random_bits(*c.stochastic_seed, index))
               : encode(f, x, c.overflow);
  q.decoded = decode(f, q.bits);
  const double in = x, out = q.decoded;
  q.abs_err = (std::isinf(in) && in == out) ? 0.0 : std::fabs(out - in);
  q.rel_err = in == 0 ? (out == 0 ? 0.0 : INFINITY) : q.abs_err / std::fabs(in);
  if (std::isinf(in)) q.rel_err = in == out ? 0.0 : NAN;
  // Overflowed: the rounding (same mode, same random bits) went beyond max finite, or x = +-inf.
  // Probed in ieee mode on |x|, where an overflow shows as inf (or E4M3FN's NaN).
  const uint32_t rnd = c.stochastic_seed ? sr_random_bits(*c.stochastic_seed, index) : 0u;
  const float ax = std::fabs(x);
  const uint32_t probe =
      c.stochastic_seed ? encode_sr(f, ax, Overflow::ieee, rnd) : encode(f, ax, Overflow::ieee);
  // MX formats (no NaN, or no sign; round to nearest only): the rounding itself is probed, and
  // E8M0's zeros and negatives, out of its range below, count as out of range too.
  const bool mx = f.nan_encoding == NanEncoding::none || !f.has_sign;
  const bool overflowed =
      mx ? !std::isnan(x) && (rounds_beyond_max(f, x) || (!f.has_sign && x <= 0.0f))
         : !std::isnan(x) && (std::isinf(x) || probe == (f.has_inf ? f.inf_code : f.nan_code));
  q.saturated = overflowed && !(c.overflow == Overflow::ieee && std::isinf(x) && f.has_inf);
  q.flushed = std::isfinite(x) && x != 0.0f && out == 0.0;
  return q;
}

QuantizeAccumulator::QuantizeAccumulator(const QuantizeConfig& c) : c_(c) {
  table_.title = "";  // set by table()
  table_.columns = {"input", "bits", "s exp man", "decoded", "abs err", "rel err", "note"};
}

json QuantizeAccumulator::value_json(const QuantizedValue& q) const {
  const Format& f = *c_.format;
  return {{"input", json_number(q.input)},
          {"dtype", f.name},
          {"overflow", overflow_name(c_.overflow)},
          {"bits", hex_bits(f, q.bits)},
          {"decoded", json_number(q.decoded)},
          {"abs_err", json_number(q.abs_err)},
          {"rel_err", json_number(q.rel_err)},
          {"saturated", q.saturated},
          {"flushed", q.flushed}};
}

void QuantizeAccumulator::add(std::span<const float> values,
                              const std::function<void(const json&)>& on_value) {
  const Format& f = *c_.format;
  for (size_t i = 0; i < values.size(); ++i) {
    const QuantizedValue q = quantize_value(c_, values[i], count_ + i);
    n_sat_ += q.saturated;
    n_flush_ += q.flushed;
    n_nan_ += std::isnan(q.decoded) ? 1 : 0;
    if (std::isfinite(q.abs_err) && !q.saturated) max_abs_ = std::max(max_abs_, q.abs_err);
    if (std::isfinite(q.rel_err) && !q.saturated && !q.flushed)
      max_rel_ = std::max(max_rel_, q.rel_err);
    if (on_value) on_value(value_json(q));
    if (count_ + i < c_.max_table_rows) {
      std::string note;
      if (q.saturated)
        note = std::isnan(q.decoded)   ? "overflow -> NaN"
               : std::isinf(q.decoded) ? "overflow -> inf"
                                       : "saturated to max finite";
      if (q.flushed) note = "flushed to zero";
      if (std::isnan(q.input))
        note =
            f.nan_encoding == NanEncoding::none ? "NaN -> +max (no NaN)" : "NaN -> canonical NaN";
      if (!f.has_sign && !std::isnan(q.input) && q.input <= 0.0f)
        note = std::isnan(q.decoded) ? "not positive -> NaN" : "not positive -> min";
      table_.rows.push_back({fmt::format("{:.9g}", q.input), hex_bits(f, q.bits),
                             bit_fields(f, q.bits), fmt::format("{:.9g}", q.decoded),
                             fmt::format("{:.3g}", q.abs_err), fmt::format("{:.3g}", q.rel_err),
                             note});
    }
  }
  count_ += values.size();
}

Table QuantizeAccumulator::table() const {
  const Format& f = *c_.format;
  Table t = table_;
  t.title = fmt::format(
      "{} values -> {} ({}, {})", count_, f.name, overflow_name(c_.overflow),
      c_.stochastic_seed
          ? fmt::format("stochastic rounding, seed {}", *c_.stochastic_seed)
          : std::string(f.has_sign ? "round to nearest even" : "round to nearest, ties up"));
  if (count_ > c_.max_table_rows)
    t.notes.push_back(fmt::format("showing the first {} of {} values; --json has all of them",
                                  c_.max_table_rows, count_));
  t.notes.push_back(fmt::format(
      "{} saturated/overflowed, {} flushed to zero, {} NaN; max abs err {:.3g} and max rel err "
      "{:.3g} over the values in range",
      n_sat_, n_flush_, n_nan_, max_abs_, max_rel_));
  return t;
}

json QuantizeAccumulator::summary() const {
  return {{"count", count_},
          {"saturated", n_sat_},
          {"flushed", n_flush_},
          {"nan", n_nan_},
          {"max_abs_err_in_range", max_abs_},
          {"max_rel_err_in_range", max_rel_}};
}

Report quantize_report(const QuantizeConfig& c, std::span<const float> values) {
  Report r;
  r.command = "quantize";
  QuantizeAccumulator acc(c);
  json vals = json::array();
  acc.add(values, [&](const json& v) { vals.push_back(v); });
  r.tables.push_back(acc.table());
  r.results["values"] = std::move(vals);
  r.results["summary"] = acc.summary();
  return r;
}

// ---- readers

static std::string lower(std::string s) {
  for (auto& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

namespace {

bool digit_or_point(char c) { return (c >= '0' && c <= '9') || c == '.'; }

// parse_float32 with `where()` called only for an error's message (a stream of ten million values
// formatted "<source> line <n>" for each of them spent 15 % of its time on that).
template <typename Where>
float parse_float32_at(const std::string& token, const Where& where) {
  const auto not_a_number = [&] {
    return Error(fmt::format("{}: '{}' is not a number", where(), printable_text(token)),
                 "give decimal or hex floats, nan, inf or -inf");
  };
  // A token that starts with a digit or a point (after one sign) is none of the names below and
  // holds no upper-case letter that matters: the names' checks are skipped.
  const size_t s = !token.empty() && (token[0] == '-' || token[0] == '+') ? 1 : 0;
  const bool numeric = token.size() > s && digit_or_point(token[s]);
  const std::string lo = numeric ? std::string() : lower(token);
  const std::string body = numeric ? std::string() : lo.substr(s);
  const bool neg = !token.empty() && token[0] == '-';
  if (!numeric) {
    if (body == "nan") return neg ? -NAN : NAN;
    if (body == "inf" || body == "infinity") return neg ? -INFINITY : INFINITY;
  }
  // The whole token must be the number: a NUL inside it ("1.5\0junk") stops strtof early.
  if (token.empty() || std::isspace(static_cast<unsigned char>(token[0]))) throw not_a_number();
  errno = 0;
  char* end = nullptr;
  const float v = std::strtof(token.c_str(), &end);
  if (end == token.c_str() || end != token.c_str() + token.size() ||
      (!numeric && (body.rfind("nan", 0) == 0 || body.rfind("inf", 0) == 0)))
    throw not_a_number();
  if (std::isinf(v))
    throw Error(
        fmt::format("{}: '{}' is beyond the float32 range (max 3.40282347e38)", where(), token),
        "write inf or -inf for an infinity");
  if (v == 0.0f) {
    // A literal like 1e-50 that reads as 0: say so instead of silently quantizing 0.
    const std::string zbody = lower(token).substr(s);
    const double d = std::strtod(token.c_str(), nullptr);
    bool nonzero_digit = d != 0.0;
    for (char ch : zbody) {
      if (ch == 'e' || ch == 'p') break;
      if (ch >= '1' && ch <= '9') nonzero_digit = true;
      if (zbody.rfind("0x", 0) == 0 && std::isxdigit(static_cast<unsigned char>(ch)) && ch != '0' &&
          ch != 'x')
        nonzero_digit = true;
    }
    if (nonzero_digit)
      throw Error(fmt::format("{}: '{}' is below float32's smallest subnormal (1.4e-45) and would "
                              "read as 0",
                              where(), token),
                  "write 0 if you mean zero");
  }
  return v;
}

}  // namespace

float parse_float32(const std::string& token, const std::string& where) {
  return parse_float32_at(token, [&where]() -> const std::string& { return where; });
}

// ---- streaming readers

size_t ValueReader::read_some(char* buf, size_t n) {
  if (eof_) return 0;
  const size_t got = std::fread(buf, 1, n, in_);
  if (got < n) {
    if (std::ferror(in_))
      throw Error(fmt::format("cannot read {}: {}", source_, std::strerror(errno)));
    eof_ = true;
  }
  bytes_ += got;
  return got;
}

bool ValueReader::next(std::vector<float>& out, size_t max_values) {
  out.clear();
  if (binary_) {
    out.resize(max_values);
    char* dst = reinterpret_cast<char*>(out.data());
    size_t have = 0;
    if (!pending_.empty()) {
      std::memcpy(dst, pending_.data(), pending_.size());
      have = pending_.size();
      pending_.clear();
    }
    while (have < max_values * 4 && !eof_) have += read_some(dst + have, max_values * 4 - have);
    if (eof_ && have % 4 != 0)
      throw Error(fmt::format("{} has {} bytes, which is not a multiple of 4", source_, bytes_),
                  "--binary reads raw little-endian float32 values, 4 bytes each");
    out.resize(have / 4);
    return !out.empty();
  }
  // Text: a byte-at-a-time tokenizer, so that neither a long line nor a long comment is held in
  // memory; only the current token is (at most kMaxToken bytes).
  constexpr size_t kMaxToken = 512;
  char buf[1 << 16];
  while (out.size() < max_values) {
    if (pos_ == pending_.size()) {
      pending_.clear();
      pos_ = 0;
      if (eof_) break;
      const size_t got = read_some(buf, sizeof buf);
      pending_.assign(buf, got);
      if (got == 0) continue;
    }
    const char ch = pending_[pos_++];
    const bool sep =
        ch == '\n' || ch == ',' || ch == '#' || std::isspace(static_cast<unsigned char>(ch));
    if (!in_comment_ && !sep) {
      after_comma_ = false;
      if (token_.size() >= kMaxToken)
        throw Error(fmt::format("{} line {}: a token longer than {} characters is not a number",
                                source_, line_, kMaxToken),
                    "give decimal or hex floats, nan, inf or -inf");
      token_ += ch;
      continue;
    }
    if (!token_.empty()) {
      out.push_back(
          parse_float32_at(token_, [this] { return fmt::format("{} line {}", source_, line_); }));
      token_.clear();
    }
    if (ch == ',' && !in_comment_) {
      if (after_comma_)  // "1,,2": an empty field, as every list option refuses it
        throw Error(fmt::format("{} line {}: an empty field between two commas", source_, line_),
                    "separate the numbers by one comma, blanks or new lines");
      after_comma_ = true;
    }
    if (ch == '#') in_comment_ = true;
    if (ch == '\n') {
      in_comment_ = false;
      after_comma_ = false;
      ++line_;
    }
  }
  if (eof_ && pos_ == pending_.size() && !token_.empty() && out.size() < max_values) {
    out.push_back(
        parse_float32_at(token_, [this] { return fmt::format("{} line {}", source_, line_); }));
    token_.clear();
  }
  return !out.empty();
}

namespace {
// A FILE* over a string, for the whole-string readers below.
struct MemFile {
  std::FILE* f;
  explicit MemFile(const std::string& s)
      : f(s.empty() ? std::tmpfile() : fmemopen(const_cast<char*>(s.data()), s.size(), "rb")) {
    if (!f) throw Error("out of file handles");
  }
  ~MemFile() { std::fclose(f); }
};
std::vector<float> read_all_values(const std::string& data, const std::string& source,
                                   bool binary) {
  MemFile m(data);
  ValueReader r(m.f, source, binary);
  std::vector<float> all, chunk;
  while (r.next(chunk, 1 << 16)) all.insert(all.end(), chunk.begin(), chunk.end());
  return all;
}
}  // namespace

std::vector<float> parse_float_text(const std::string& text, const std::string& source) {
  return read_all_values(text, source, false);
}

std::vector<float> parse_float_binary(const std::string& bytes, const std::string& source) {
  return read_all_values(bytes, source, true);
}

// ---- raw encodings

namespace {
template <class T>
size_t write_codes(const Format& f, Overflow ov, std::span<const float> values, std::FILE* out) {
  std::vector<T> codes(values.size());
  encode_array(f, values, std::span<T>(codes), ov);
  const size_t n = std::fwrite(codes.data(), sizeof(T), codes.size(), out);
  if (n != codes.size()) throw Error("writing the encoded values failed", std::strerror(errno));
  return n * sizeof(T);
}
}  // namespace

size_t write_encoded(const Format& f, Overflow ov, std::span<const float> values, std::FILE* out) {
  if (f.total_bits <= 8) return write_codes<uint8_t>(f, ov, values, out);
  if (f.total_bits <= 16) return write_codes<uint16_t>(f, ov, values, out);
  return write_codes<uint32_t>(f, ov, values, out);
}

namespace {
// Every float32 bit pattern in order, as codes of type T (the format's width): groups of chunks
// are converted in parallel, then written in order. Each worker converts its chunk in blocks
// that stay in the L1 cache and writes the codes straight into its output, which is written as
// it is (little-endian: this host is x86).
template <class T>
size_t write_all_float32_as(const Format& f, Overflow ov, std::FILE* out, int threads) {
  constexpr uint64_t kChunk = uint64_t(1) << 22;
  constexpr uint64_t kBlock = uint64_t(1) << 12;
  const int workers = threads > 0 ? threads : default_threads();
  const uint64_t group = kChunk * uint64_t(workers);
  std::vector<std::vector<T>> codes(static_cast<size_t>(workers), std::vector<T>(kChunk));
  size_t written = 0;
  const uint64_t total = uint64_t(1) << 32;
  for (uint64_t g = 0; g < total; g += group) {
    const uint64_t n = std::min(group, total - g);
    parallel_chunks(n, kChunk, workers, [&](uint64_t c, uint64_t b, uint64_t e) {
      std::vector<float> x(kBlock);
      T* o = codes[size_t(c)].data();
      for (uint64_t s = b; s < e; s += kBlock) {
        const uint64_t m = std::min(kBlock, e - s);
        for (uint64_t i = 0; i < m; ++i) x[size_t(i)] = f32_from_bits(uint32_t(g + s + i));
        encode_array(f, std::span<const float>(x.data(), size_t(m)),
                     std::span<T>(o + (s - b), size_t(m)), ov);
      }
    });
    for (uint64_t c = 0; c < chunk_count(n, kChunk); ++c) {
      const uint64_t len = std::min(kChunk, n - c * kChunk);
      if (std::fwrite(codes[size_t(c)].data(), sizeof(T), size_t(len), out) != size_t(len))
        throw Error("writing the encodings failed", std::strerror(errno));
      written += size_t(len) * sizeof(T);
    }
  }
  return written;
}
}  // namespace

size_t write_encoded_all_float32(const Format& f, Overflow ov, std::FILE* out, int threads) {
  if (f.total_bits <= 8) return write_all_float32_as<uint8_t>(f, ov, out, threads);
  if (f.total_bits <= 16) return write_all_float32_as<uint16_t>(f, ov, out, threads);
  return write_all_float32_as<uint32_t>(f, ov, out, threads);
}

}  // namespace fa4sim
