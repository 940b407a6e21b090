// `fa4sim block`: encode a float array (.npy) into a block-scaled format (MXFP8, MXFP6, MXFP4,
// NVFP4, or any element / scale format / block size / scale rule) and write the element codes,
// the block scales and the decoded values as .npy; or decode codes and scales back (--decode).
// The numerics are include/fa4sim/core/block_scale.h's; the summary src/analysis/block_report.cpp's.
#include <cmath>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/block_report.h"
#include "fa4sim/options/block_options.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

namespace fa4sim::cli {

namespace {

struct BlockCliOptions : BlockFormatOptions {
  std::string in, codes, scales;
  std::string codes_out, scales_out, decoded_out;
  bool decode = false;
  CommonOptions common;
};

void add_block_options(CLI::App* sub, BlockCliOptions& c) {
  sub->add_option(
         "--format", c.format,
         "Block format: mxfp8 (e4m3), mxfp8-e5m2, mxfp6 (e2m3), mxfp6-e3m2, mxfp4 (e2m1): "
         "E8M0 scale, block 32, rule floor; nvfp4: e2m1, E4M3 scale, block 16, rule nearest")
      ->type_name("NAME")
      ->capture_default_str();
  sub->add_option("--elem", c.elem,
                  "Element format, overrides --format's: e4m3, e5m2, e2m3, e3m2, e2m1")
      ->type_name("NAME");
  sub->add_option(
         "--scale-format", c.scale_format,
         "Scale format, overrides --format's: e8m0 (power-of-two rules) or e4m3 (rule nearest)")
      ->type_name("NAME");
  int_in(sub->add_option("--block", c.block,
                         "Elements per block, overrides --format's (must divide the row)"),
         1, 4096)
      ->type_name("N");
  sub->add_option(
         "--rule", c.rule,
         "Scale rule, overrides --format's: floor (OCP MX), ceil, even (torchao), rceil "
         "(cuBLAS/cuDNN round-up of amax/max_elem), nearest (NVFP4: amax/max_elem in E4M3)")
      ->type_name("floor|ceil|even|rceil|nearest");
  checked(sub->add_option("--tensor-scale", c.tensor_scale,
                          "NVFP4's FP32 tensor scale: auto (amax / (scale max * elem max), "
                          "torchao's), or a value > 0 (needed to --decode what auto encoded); "
                          "default none"),
          ">0",
          [](const std::string& opt, const std::string& v) {
            if (v != "auto" && !(parse_double(opt, v) > 0))
              throw Error(fmt::format("{} must be 'auto' or finite and > 0, got {}", opt, v),
                          "e.g. --tensor-scale auto");
          })
      ->type_name("auto|T");
  sub->add_option("--in", c.in,
                  "Input array (.npy float32, float16 or bfloat16 bits as uint16); "
                  "the last dimension is the row")
      ->type_name("FILE")
      ->check(non_empty_path());
  sub->add_flag("--decode", c.decode, "Decode --codes and --scales instead of encoding --in");
  sub->add_option("--codes", c.codes, "With --decode: element codes (.npy uint8)")
      ->type_name("FILE")
      ->check(non_empty_path());
  sub->add_option("--scales", c.scales, "With --decode: block scale codes (.npy uint8)")
      ->type_name("FILE")
      ->check(non_empty_path());
  sub->add_option("--codes-out", c.codes_out,
                  "Write the element codes (.npy uint8, the input's shape)")
      ->type_name("FILE")
      ->check(non_empty_path());
  sub->add_option("--scales-out", c.scales_out,
                  "Write the scale codes (.npy uint8, shape (..., row / block))")
      ->type_name("FILE")
      ->check(non_empty_path());
  sub->add_option("--decoded-out", c.decoded_out, "Write the decoded values (.npy float32)")
      ->type_name("FILE")
      ->check(non_empty_path());
}

void check_sources(const BlockCliOptions& c) {
  if (c.decode) {
    if (c.codes.empty() || c.scales.empty())
      throw Error("--decode needs --codes and --scales",
                  "e.g. --decode --codes c.npy --scales s.npy --decoded-out d.npy");
    if (!c.in.empty())
      throw Error("--in is what --decode does not read", "drop --in, or drop --decode");
    if (c.tensor_scale == "auto")
      throw Error("--tensor-scale auto needs the input; --decode needs the value",
                  "give --tensor-scale VALUE as encoding printed it");
    if (!c.codes_out.empty() || !c.scales_out.empty())
      throw Error("--decode writes only --decoded-out", "drop --codes-out and --scales-out");
  } else {
    if (c.in.empty()) throw Error("nothing to encode", "give --in FILE.npy (or --decode)");
    if (!c.codes.empty() || !c.scales.empty())
      throw Error("--codes and --scales are read by --decode", "add --decode, or drop them");
  }
  for (const auto* p : {&c.codes_out, &c.scales_out, &c.decoded_out})
    if (!p->empty()) check_output_path(*p, "output file");
  check_report_path(c.common.json_path);
}

std::vector<uint64_t> scale_shape(std::vector<uint64_t> shape, const BlockFormat& f) {
  if (shape.empty() || shape.back() == 0 || shape.back() % uint64_t(f.block_size) != 0)
    throw Error(fmt::format("--block {} does not divide the row length {}", f.block_size,
                            shape.empty() ? 0 : shape.back()),
                "the last dimension is the row; pick a block size that divides it");
  shape.back() /= uint64_t(f.block_size);
  return shape;
}

void run_encode(const BlockCliOptions& c, BlockFormat f, const Stopwatch& sw) {
  const NpyArray a = read_npy(c.in);
  const std::vector<float> x = a.to_float32();
  const std::vector<uint64_t> sshape = scale_shape(a.shape, f);
  if (c.tensor_scale == "auto") f.tensor_scale = tensor_scale_from_amax(f, x);
  const BlockQuantized q = block_quantize(f, x, size_t(a.shape.back()));
  if (!c.codes_out.empty())
    write_npy(c.codes_out, NpyType::u8, a.shape, q.codes.data(), q.codes.size());
  if (!c.scales_out.empty())
    write_npy(c.scales_out, NpyType::u8, sshape, q.scales.data(), q.scales.size());
  if (!c.decoded_out.empty()) write_npy_f32(c.decoded_out, a.shape, q.decoded);
  Report r = block_report(f, x, size_t(a.shape.back()), q);
  r.params = {{"format", c.format},
              {"elem", f.elem->name},
              {"scale_format", f.scale->name},
              {"block", f.block_size},
              {"rule", scale_rule_name(f.rule)},
              {"tensor_scale", fmt::format("{:a}", f.tensor_scale)},
              {"in", c.in},
              {"shape", a.shape}};
  emit(r, c.common.json_path, sw.seconds());
}

void run_decode(const BlockCliOptions& c, const BlockFormat& f, const Stopwatch& sw) {
  const NpyArray codes = read_npy(c.codes, true), scales = read_npy(c.scales, true);
  if (codes.type != NpyType::u8 || scales.type != NpyType::u8)
    throw Error("--codes and --scales must be uint8 arrays",
                "as --codes-out and --scales-out wrote them");
  const std::vector<uint64_t> want = scale_shape(codes.shape, f);
  if (scales.shape != want)
    throw Error(
        fmt::format("--scales has shape {}; codes of shape {} in blocks of {} need {}",
                    scales.shape_string(), codes.shape_string(), f.block_size, shape_string(want)),
        "decode with the block format that encoded them");
  // A code above the element format's largest would decode as some other code's value.
  const uint32_t top = (1u << f.elem->total_bits) - 1;
  for (size_t i = 0; i < codes.raw.size(); ++i)
    if (codes.raw[i] > top)
      throw Error(fmt::format("--codes holds 0x{:X} at index {}, above {}'s largest code 0x{:X}",
                              codes.raw[i], i, f.elem->name, top),
                  "decode with the block format that encoded them");
  std::vector<float> out(codes.raw.size());
  block_decode_array(f, codes.raw, size_t(codes.shape.back()), scales.raw, out);
  if (!c.decoded_out.empty()) write_npy_f32(c.decoded_out, codes.shape, out);
  Report r;
  r.command = "block";
  r.params = {{"decode", true},
              {"elem", f.elem->name},
              {"scale_format", f.scale->name},
              {"block", f.block_size},
              {"rule", scale_rule_name(f.rule)},
              {"tensor_scale", fmt::format("{:a}", f.tensor_scale)},
              {"codes", c.codes},
              {"scales", c.scales}};
  r.results["summary"] = {{"elements", out.size()}, {"blocks", scales.raw.size()}};
  Table t;
  t.title = fmt::format("Decoded {} elements in {} blocks", out.size(), scales.raw.size());
  t.columns = {"elements", "blocks"};
  t.rows.push_back({std::to_string(out.size()), std::to_string(scales.raw.size())});
  r.tables.push_back(std::move(t));
  emit(r, c.common.json_path, sw.seconds());
}

}  // namespace

void add_block(CLI::App& root) {
  static BlockCliOptions c;
  auto* sub = root.add_subcommand(
      "block",
      "Block-scaled formats (MXFP8/6/4, NVFP4): encode a .npy array into element codes and "
      "block scales, decode them back, and the round trip's error");
  add_block_options(sub, c);
  add_common_options(sub, c.common);
  sub->footer(
      "Examples:\n"
      "  fa4sim block --format mxfp4 --in x.npy --codes-out c.npy --scales-out s.npy\n"
      "  fa4sim block --format mxfp4 --decode --codes c.npy --scales s.npy --decoded-out d.npy\n"
      "  fa4sim block --format nvfp4 --tensor-scale auto --in x.npy --json -");
  sub->callback([] {
    Stopwatch sw;
    const BlockFormat f = parse_block_format(c);
    check_sources(c);
    if (c.decode)
      run_decode(c, f, sw);
    else
      run_encode(c, f, sw);
  });
}

}  // namespace fa4sim::cli
