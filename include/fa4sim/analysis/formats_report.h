// formats_report.h: the analyses behind `fa4sim formats` and `fa4sim quantize` (the CLI only
// parses options and calls these), and the input readers they share with the tests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

// ---- `fa4sim formats`: every named format's parameters and derived limits.
Report formats_table_report();

// ---- `fa4sim quantize`
struct QuantizeConfig {
  const Format* format = &kE4M3;
  Overflow overflow = Overflow::satfinite;
  std::optional<uint64_t> stochastic_seed;  // set: stochastic rounding with this seed
  size_t max_table_rows = 40;               // human table; the JSON has every value
};

struct QuantizedValue {
  float input;
  uint32_t bits;
  float decoded;
  double abs_err;  // |decoded - input| (NaN when either is NaN; inf when one is infinite)
  double rel_err;  // abs_err / |input|; 0 for input 0
  bool saturated;  // out of range and the overflow rule fired (satfinite: -> max finite;
                   // ieee: -> inf, or NaN for E4M3FN); +-inf counts under satfinite only
  bool flushed;    // a nonzero finite input that became +-0
};

QuantizedValue quantize_value(const QuantizeConfig& c, float x, uint64_t index);
Report quantize_report(const QuantizeConfig& c, std::span<const float> values);

// The same in pieces, for a stream of any length: keeps the summary and the first
// max_table_rows table rows, hands each value's JSON object to `on_value` (if set) and forgets
// it. Value i of the stream (over all add() calls) uses stochastic-rounding index i.
class QuantizeAccumulator {
 public:
  explicit QuantizeAccumulator(const QuantizeConfig& c);
  void add(std::span<const float> values, const std::function<void(const json&)>& on_value = {});
  uint64_t count() const { return count_; }
  Table table() const;   // title, first rows, summary note
  json summary() const;  // results.summary

 private:
  json value_json(const QuantizedValue& q) const;
  QuantizeConfig c_;
  Table table_;
  uint64_t count_ = 0, n_sat_ = 0, n_flush_ = 0, n_nan_ = 0;
  double max_abs_ = 0, max_rel_ = 0;
};

// "0 1111 110": sign, exponent and mantissa fields of `bits` in format f.
std::string bit_fields(const Format& f, uint32_t bits);

// ---- input readers (fa4sim::Error, exit code 2, on bad input)
// One value: decimal or hex float, "nan", "inf", "-inf" (any case). Errors: not a number,
// trailing junk, finite literals beyond float32's range (1e999, 1e39: "write inf"), nonzero
// literals that would read as 0 (1e-50). `where` names the source in messages.
float parse_float32(const std::string& token, const std::string& where);
// Text: values separated by whitespace or commas, '#' starts a comment; errors name the line.
std::vector<float> parse_float_text(const std::string& text, const std::string& source);
// Raw little-endian float32; the byte count must be a multiple of 4.
std::vector<float> parse_float_binary(const std::string& bytes, const std::string& source);

// The same two formats read from a stream in pieces, in constant memory (a text token is
// limited to 512 bytes; lines and comments may have any length).
class ValueReader {
 public:
  ValueReader(std::FILE* in, std::string source, bool binary)
      : in_(in), source_(std::move(source)), binary_(binary) {}
  // Replaces `out` with the next values (at most max_values); false at the end of the stream.
  bool next(std::vector<float>& out, size_t max_values);

 private:
  size_t read_some(char* buf, size_t n);
  std::FILE* in_;
  std::string source_;
  bool binary_;
  bool eof_ = false, in_comment_ = false;
  bool after_comma_ = false;  // a comma with no number since: a second one is an empty field
  std::string pending_, token_;
  size_t pos_ = 0, line_ = 1;
  uint64_t bytes_ = 0;
};

// Writes the encodings of `values` as raw little-endian integers of the format's width (1, 2 or
// 4 bytes) to `out` (a FILE* opened for binary writing). Returns the bytes written.
size_t write_encoded(const Format& f, Overflow ov, std::span<const float> values, std::FILE* out);
// The same for all 2^32 float32 inputs in bit-pattern order 0x00000000..0xFFFFFFFF, streamed
// in chunks (threads: 0 = all cores); 2^32 x width bytes. For scripts/check/check_ml_dtypes.py.
size_t write_encoded_all_float32(const Format& f, Overflow ov, std::FILE* out, int threads);

// A JSON value for a double: the number, or "nan" / "inf" / "-inf" (JSON has no non-finite).
json json_number(double x);

}  // namespace fa4sim
