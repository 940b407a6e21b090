// `fa4sim quantize`: convert float32 values to a number format and show the bits, the decoded
// value, the error and whether the value saturated or flushed. Values come from the command
// line, from stdin (text, or raw float32 with --binary), or are all 2^32 float32 patterns
// (--all-float32, raw output only: the feed of scripts/check/check_ml_dtypes.py).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/seed.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/formats_report.h"
#include "fa4sim/util/progress.h"
#include "fa4sim/util/report.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim::cli {

namespace {

struct QuantizeCliOptions {
  std::string dtype = "e4m3";
  std::string overflow = "satfinite";
  std::string rounding = "nearest";
  std::string seed;
  std::vector<std::string> values;
  bool from_stdin = false;
  bool binary = false;
  bool all_float32 = false;
  std::string binary_out;
  CommonOptions common;
};

// Values come in chunks of this many; memory does not grow with the input.
constexpr size_t kChunk = size_t(1) << 16;

// Indents every line after the first by `n` spaces (to nest a dumped JSON value).
std::string indent_tail(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    out += ch;
    if (ch == '\n') out.append(size_t(n), ' ');
  }
  return out;
}

void put(std::FILE* f, const std::string& s) {
  if (std::fwrite(s.data(), 1, s.size(), f) != s.size())
    throw Error("writing the report failed", std::strerror(errno));
}

// The report envelope with results.values streamed: the same text as Report + emit() would
// write (json.dump(2)), produced value by value. `prefix` and `suffix` come from dumping the
// envelope with placeholders where the streamed parts go.
struct StreamedEnvelope {
  std::string prefix, middle;  // ..."values": [  |  ], "summary": ...
  bool first = true;
  explicit StreamedEnvelope(const json& params) {
    Report shell;
    shell.command = "quantize";
    shell.params = params;
    shell.results["values"] = json::array({"@@values@@"});
    shell.results["summary"] = "@@summary@@";
    const std::string text = envelope(shell, 0).dump(2);
    const std::string v = "\"@@values@@\"";
    const size_t at = text.find(v);
    const size_t open = text.rfind('[', at);
    prefix = text.substr(0, open + 1);
    middle = text.substr(at + v.size());  // "\n    ],\n    \"summary\": \"@@summary@@\"\n  },..."
  }
  void value(std::FILE* f, const json& v) {
    put(f, (first ? "\n      " : ",\n      ") + indent_tail(v.dump(2), 6));
    first = false;
  }
  void finish(std::FILE* f, const json& summary, const json& prov) {
    std::string tail = first ? middle.substr(middle.find(']')) : middle;  // empty: "[]"
    const std::string s = "\"@@summary@@\"";
    tail.replace(tail.find(s), s.size(), indent_tail(summary.dump(2), 4));
    // The provenance written at the start was a placeholder: replace the envelope's last member.
    const size_t p = tail.rfind("\"provenance\": ");
    tail = tail.substr(0, p) + "\"provenance\": " + indent_tail(prov.dump(2), 2) + "\n}\n";
    put(f, tail);
  }
};

// ---- the options, the values, the checks

void add_quantize_options(CLI::App* sub, QuantizeCliOptions& c) {
  sub->add_option(
         "--dtype", c.dtype,
         "Target format: fp32, bf16, fp16, e4m3 (E4M3FN), e5m2, or the OCP MX formats e2m1 "
         "(FP4), e2m3, e3m2 (FP6), e8m0 (the MX scale)")
      ->type_name("NAME")
      ->capture_default_str();
  sub->add_option(
         "--overflow", c.overflow,
         "satfinite: overflow and +-inf -> max finite (the GPU's cvt.rn.satfinite); ieee: -> "
         "inf (E4M3FN, E8M0: NaN). NaN -> canonical NaN in both. e2m1/e2m3/e3m2 have no "
         "inf or NaN: satfinite only, NaN -> +max")
      ->type_name("satfinite|ieee")
      ->capture_default_str();
  sub->add_option("--rounding", c.rounding,
                  "nearest (ties to even, the hardware's) or stochastic (seeded, see --seed)")
      ->type_name("nearest|stochastic")
      ->capture_default_str();
  int_in(sub->add_option(
             "--seed", c.seed,
             fmt::format("Seed of the stochastic rounding stream (default {})", kDefaultSeed)),
         0, INT64_MAX)
      ->type_name("S");
  // VALUES are taken from the unparsed arguments, in order, so that -inf, -nan and negative
  // numbers work anywhere (a CLI11 positional would read "-inf" as an unknown option).
  sub->allow_extras();
  sub->footer(
      "VALUES: decimal or hex floats, nan, inf, -inf, in any order with the options, e.g.\n"
      "  fa4sim quantize --dtype e4m3 1.5 -inf 500 nan\n"
      "  echo '1 2 3' | fa4sim quantize --dtype bf16 --stdin --json -");
  sub->add_flag(
      "--stdin", c.from_stdin,
      "Read values from stdin: whitespace- or comma-separated text ('#' comments), or raw "
      "little-endian float32 with --binary");
  sub->add_flag("--binary", c.binary, "With --stdin: read raw little-endian float32");
  sub->add_flag("--all-float32", c.all_float32,
                "Convert all 2^32 float32 bit patterns in order (needs --binary-out; for "
                "scripts/check/check_ml_dtypes.py)");
  sub->add_option(
         "--binary-out", c.binary_out,
         "Write the encodings as raw little-endian integers of the format's width (1, 2 or 4 "
         "bytes) to FILE, or to stdout with '-'")
      ->type_name("FILE|-")
      ->check(non_empty_path());
}

// VALUES: the unparsed arguments, in order; an unknown `--option` is a typo, not a value.
void collect_values(CLI::App* sub, QuantizeCliOptions& c) {
  c.values.clear();
  for (const auto& a : sub->remaining()) {
    if (a.rfind("--", 0) == 0) {  // an option typo, not a value: main's message for it
      std::vector<std::string> names;
      for (const auto* o : sub->get_options())
        if (!o->get_lnames().empty()) names.push_back("--" + o->get_lnames().front());
      const std::string name = a.substr(0, a.find('='));
      std::string hint = "see 'fa4sim quantize --help'";
      if (auto m = did_you_mean(name, names)) hint = fmt::format("did you mean '{}'? {}", *m, hint);
      throw Error(fmt::format("unknown option '{}' for 'fa4sim quantize'", name), hint);
    }
    c.values.push_back(a);
  }
}

// Everything is validated before any work; returns the conversion and the rounding's name.
std::pair<QuantizeConfig, std::string> validate_options(const QuantizeCliOptions& c) {
  QuantizeConfig qc;
  qc.format = &format_by_name(c.dtype);
  qc.overflow = overflow_by_name(parse_choice("--overflow", c.overflow, {"satfinite", "ieee"}));
  require_overflow_mode(*qc.format, qc.overflow);
  const std::string rounding = parse_choice("--rounding", c.rounding, {"nearest", "stochastic"});
  if (rounding == "stochastic") require_stochastic_rounding(*qc.format);
  if (!c.seed.empty() && rounding != "stochastic")
    throw Error("--seed is only used by stochastic rounding", "add --rounding stochastic");
  if (rounding == "stochastic")
    qc.stochastic_seed =
        c.seed.empty() ? kDefaultSeed : uint64_t(parse_int("--seed", c.seed, 0, INT64_MAX));
  if (c.binary && !c.from_stdin) throw Error("--binary describes stdin", "add --stdin");
  const int sources = int(!c.values.empty()) + int(c.from_stdin) + int(c.all_float32);
  if (sources == 0)
    throw Error("nothing to quantize",
                "give VALUES, --stdin or --all-float32, e.g. fa4sim quantize --dtype e4m3 1.5 500");
  if (sources > 1)
    throw Error("give the values one way: VALUES, --stdin or --all-float32", "drop all but one");
  if (c.all_float32 && c.binary_out.empty())
    throw Error("--all-float32 writes 2^32 encodings and needs --binary-out FILE|-",
                "e.g. --all-float32 --binary-out e4m3.bin");
  if (c.all_float32 && qc.stochastic_seed)
    throw Error("--all-float32 converts with round to nearest only", "drop --rounding stochastic");
  if (!c.binary_out.empty() && qc.stochastic_seed)
    throw Error("--binary-out writes round-to-nearest encodings only",
                "drop --rounding stochastic");
  if (same_output_target(c.binary_out, c.common.json_path))
    throw Error(fmt::format("--binary-out '{}' and --json '{}' name the same file", c.binary_out,
                            c.common.json_path),
                "send one of them elsewhere");
  check_output_path(c.binary_out, "--binary-out");
  check_report_path(c.common.json_path);
  return {qc, rounding};
}

// --all-float32: every float32 bit pattern in order, raw encodings only.
void write_all_float32(const QuantizeCliOptions& c, const QuantizeConfig& qc, int threads,
                       const Stopwatch& sw) {
  write_output(
      c.binary_out,
      [&](std::FILE* f) { write_encoded_all_float32(*qc.format, qc.overflow, f, threads); },
      "--binary-out");
  std::fprintf(stderr, "fa4sim quantize: wrote 2^32 %s encodings (%s) to %s in %.1f s\n",
               qc.format->name, overflow_name(qc.overflow), c.binary_out.c_str(), sw.seconds());
}

// ---- one pass over the values, in chunks: the raw encodings, the JSON values and the summary
// are written as the values arrive (Note [Output targets] for where they go).
void quantize_values(const QuantizeCliOptions& c, const QuantizeConfig& qc,
                     const std::string& rounding, const Stopwatch& sw) {
  std::vector<float> arg_values;
  for (size_t i = 0; i < c.values.size(); ++i)
    arg_values.push_back(parse_float32(c.values[i], fmt::format("value {}", i + 1)));
  ValueReader reader(stdin, "stdin", c.binary);
  std::vector<float> chunk;
  bool args_done = false;
  auto next = [&]() -> bool {
    if (!c.from_stdin) {
      if (args_done) return false;
      chunk = arg_values;
      args_done = true;
      return !chunk.empty();
    }
    return reader.next(chunk, kChunk);
  };
  if (!next())  // read before any output is opened: an empty input writes nothing
    throw Error("stdin holds no values",
                c.binary ? "pipe raw float32 bytes"
                         : "pipe numbers, e.g. echo 1.5 | fa4sim quantize --stdin");
  const json params = {
      {"dtype", qc.format->name},
      {"overflow", overflow_name(qc.overflow)},
      {"rounding", rounding},
      {"seed", qc.stochastic_seed ? json(*qc.stochastic_seed) : json(nullptr)},
      {"source", c.from_stdin ? (c.binary ? "stdin-binary" : "stdin-text") : "arguments"}};
  QuantizeAccumulator acc(qc);
  std::vector<uint8_t> codes;
  const size_t width = qc.format->total_bits <= 8 ? 1 : (qc.format->total_bits <= 16 ? 2 : 4);
  const bool want_report = c.binary_out != "-" && !is_stdout_target(c.binary_out);
  const bool want_json = want_report && !c.common.json_path.empty();
  StreamedEnvelope env(params);
  auto run = [&](std::FILE* bin, std::FILE* js) {
    if (js) put(js, env.prefix);
    do {
      if (bin) {
        codes.resize(chunk.size() * width);
        const std::span<const float> in(chunk);
        if (width == 1)
          encode_array(*qc.format, in, std::span<uint8_t>(codes.data(), chunk.size()), qc.overflow);
        if (width == 2)
          encode_array(*qc.format, in,
                       std::span<uint16_t>(reinterpret_cast<uint16_t*>(codes.data()), chunk.size()),
                       qc.overflow);
        if (width == 4)
          encode_array(*qc.format, in,
                       std::span<uint32_t>(reinterpret_cast<uint32_t*>(codes.data()), chunk.size()),
                       qc.overflow);
        if (std::fwrite(codes.data(), 1, codes.size(), bin) != codes.size())
          throw Error("writing the encoded values failed", std::strerror(errno));
      }
      if (want_report) {
        if (js)
          acc.add(chunk, [&](const json& v) { env.value(js, v); });
        else
          acc.add(chunk);
      }
    } while (next());
    if (js) env.finish(js, acc.summary(), provenance(1, sw.seconds()));
  };
  auto with_json = [&](std::FILE* bin) {
    if (want_json)
      write_output(c.common.json_path, [&](std::FILE* js) { run(bin, js); });
    else
      run(bin, nullptr);
  };
  if (!c.binary_out.empty())
    write_output(c.binary_out, with_json, "--binary-out");
  else
    with_json(nullptr);
  if (!want_report || is_stdout_target(c.common.json_path)) return;
  std::fputs(render_text(acc.table()).c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void add_quantize(CLI::App& root) {
  static QuantizeCliOptions c;
  auto* sub = root.add_subcommand(
      "quantize",
      "Convert float32 values to a number format: bits (hex and s/exp/man fields), decoded value, "
      "abs/rel error, saturated or flushed");
  add_quantize_options(sub, c);
  add_common_options(sub, c.common);
  sub->callback([sub] {
    Stopwatch sw;
    collect_values(sub, c);
    const auto [qc, rounding] = validate_options(c);
    const int threads = resolved_threads(c.common);
    if (c.all_float32)
      write_all_float32(c, qc, threads, sw);
    else
      quantize_values(c, qc, rounding, sw);
  });
}

}  // namespace fa4sim::cli
