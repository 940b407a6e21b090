// `fa4sim quantize`: convert float32 values to a number format and show the bits, the decoded
// value, the error and whether the value saturated or flushed. Values come from the command
// line, from stdin (text, or raw float32 with --binary), or are all 2^32 float32 patterns
// (--all-float32, raw output only: the feed of scripts/check_ml_dtypes.py).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/formats_report.h"
#include "fa4sim/util/progress.h"
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

void write_raw(const std::string& path, const std::function<size_t(std::FILE*)>& body) {
  if (path == "-") {
    body(stdout);
    std::fflush(stdout);
    return;
  }
  // Written next to the target, renamed at the end: no partial file on failure.
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(fmt::format("cannot write '{}'", path), std::strerror(errno));
  try {
    body(f);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot write '{}'", path), std::strerror(errno));
  }
}

}  // namespace

void add_quantize(CLI::App& root) {
  static QuantizeCliOptions c;
  auto* sub = root.add_subcommand(
      "quantize",
      "Convert float32 values to a number format: bits (hex and s/exp/man fields), decoded value, "
      "abs/rel error, saturated or flushed");
  sub->add_option("--dtype", c.dtype, "Target format: fp32, bf16, fp16, e4m3 (E4M3FN), e5m2")
      ->type_name("NAME")
      ->capture_default_str();
  sub->add_option("--overflow", c.overflow,
                  "satfinite: overflow and +-inf -> max finite (the GPU's cvt.rn.satfinite); ieee: -> "
                  "inf (E4M3FN: NaN). NaN -> canonical NaN in both")
      ->type_name("satfinite|ieee")
      ->capture_default_str();
  sub->add_option("--rounding", c.rounding,
                  "nearest (ties to even, the hardware's) or stochastic (seeded, see --seed)")
      ->type_name("nearest|stochastic")
      ->capture_default_str();
  sub->add_option("--seed", c.seed, "Seed of the stochastic rounding stream (default 0)")->type_name("N");
  // VALUES are taken from the unparsed arguments, in order, so that -inf, -nan and negative
  // numbers work anywhere (a CLI11 positional would read "-inf" as an unknown option).
  sub->allow_extras();
  sub->footer(
      "VALUES: decimal or hex floats, nan, inf, -inf, in any order with the options, e.g.\n"
      "  fa4sim quantize --dtype e4m3 1.5 -inf 500 nan\n"
      "  echo '1 2 3' | fa4sim quantize --dtype bf16 --stdin --json -");
  sub->add_flag("--stdin", c.from_stdin,
                "Read values from stdin: whitespace- or comma-separated text ('#' comments), or raw "
                "little-endian float32 with --binary");
  sub->add_flag("--binary", c.binary, "With --stdin: read raw little-endian float32");
  sub->add_flag("--all-float32", c.all_float32,
                "Convert all 2^32 float32 bit patterns in order (needs --binary-out; for "
                "scripts/check_ml_dtypes.py)");
  sub->add_option("--binary-out", c.binary_out,
                  "Write the encodings as raw little-endian integers of the format's width (1, 2 or 4 "
                  "bytes) to FILE, or to stdout with '-'")
      ->type_name("FILE|-");
  add_common_options(sub, c.common);
  sub->callback([sub] {
    Stopwatch sw;
    c.values.clear();
    for (const auto& a : sub->remaining()) {
      if (a.rfind("--", 0) == 0) {  // an option typo, not a value
        std::vector<std::string> names;
        for (const auto* o : sub->get_options()) names.push_back(o->get_name());
        throw_unknown_choice("option", a, names);
      }
      c.values.push_back(a);
    }
    // ---- validate everything before any work
    QuantizeConfig qc;
    qc.format = &format_by_name(c.dtype);
    qc.overflow = overflow_by_name(c.overflow);
    const std::string rounding = parse_choice("--rounding", c.rounding, {"nearest", "stochastic"});
    if (!c.seed.empty() && rounding != "stochastic")
      throw Error("--seed is only used by stochastic rounding", "add --rounding stochastic");
    if (rounding == "stochastic")
      qc.stochastic_seed = c.seed.empty() ? 0u : uint64_t(parse_int("--seed", c.seed, 0, INT64_MAX));
    if (c.binary && !c.from_stdin) throw Error("--binary describes stdin", "add --stdin");
    const int sources = int(!c.values.empty()) + int(c.from_stdin) + int(c.all_float32);
    if (sources == 0)
      throw Error("nothing to quantize", "give VALUES, --stdin or --all-float32, e.g. fa4sim quantize --dtype e4m3 1.5 500");
    if (sources > 1)
      throw Error("give the values one way: VALUES, --stdin or --all-float32", "drop all but one");
    if (c.all_float32 && c.binary_out.empty())
      throw Error("--all-float32 writes 2^32 encodings and needs --binary-out FILE|-",
                  "e.g. --all-float32 --binary-out e4m3.bin");
    if (c.all_float32 && qc.stochastic_seed)
      throw Error("--all-float32 converts with round to nearest only", "drop --rounding stochastic");
    if (!c.binary_out.empty() && qc.stochastic_seed)
      throw Error("--binary-out writes round-to-nearest encodings only", "drop --rounding stochastic");
    if (c.binary_out == "-" && c.common.json_path == "-")
      throw Error("--binary-out - and --json - both want stdout", "send one of them to a file");
    if (!c.binary_out.empty() && c.binary_out != "-") check_report_path(c.binary_out);
    check_report_path(c.common.json_path);
    const int threads = resolved_threads(c.common);

    if (c.all_float32) {
      write_raw(c.binary_out, [&](std::FILE* f) {
        return write_encoded_all_float32(*qc.format, qc.overflow, f, threads);
      });
      std::fprintf(stderr, "fa4sim quantize: wrote 2^32 %s encodings (%s) to %s in %.1f s\n",
                   qc.format->name, overflow_name(qc.overflow), c.binary_out.c_str(), sw.seconds());
      return;
    }
    std::vector<float> values;
    if (c.from_stdin) {
      const std::string data((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
      values = c.binary ? parse_float_binary(data, "stdin") : parse_float_text(data, "stdin");
      if (values.empty())
        throw Error("stdin holds no values", c.binary ? "pipe raw float32 bytes" : "pipe numbers, e.g. echo 1.5 | fa4sim quantize --stdin");
    } else {
      for (size_t i = 0; i < c.values.size(); ++i)
        values.push_back(parse_float32(c.values[i], fmt::format("value {}", i + 1)));
    }
    if (!c.binary_out.empty()) {
      write_raw(c.binary_out, [&](std::FILE* f) { return write_encoded(*qc.format, qc.overflow, values, f); });
      if (c.binary_out == "-") return;  // stdout holds the binary
    }
    Report r = quantize_report(qc, values);
    r.params = {{"dtype", qc.format->name},
                {"overflow", overflow_name(qc.overflow)},
                {"rounding", rounding},
                {"seed", qc.stochastic_seed ? json(*qc.stochastic_seed) : json(nullptr)},
                {"source", c.from_stdin ? (c.binary ? "stdin-binary" : "stdin-text") : "arguments"},
                {"count", values.size()}};
    r.threads = 1;
    emit(r, c.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
