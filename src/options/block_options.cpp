// block_options.cpp: `fa4sim block`'s format options parsed into a BlockFormat (see
// block_options.h).
#include "fa4sim/options/block_options.h"

#include <fmt/format.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"

namespace fa4sim {

BlockFormat parse_block_format(const BlockFormatOptions& o) {
  BlockFormat f = block_format_by_name(o.format);
  if (!o.elem.empty()) f.elem = &format_by_name(o.elem);
  if (!o.scale_format.empty()) f.scale = &format_by_name(o.scale_format);
  if (!o.block.empty()) f.block_size = int(parse_int("--block", o.block, 1, 4096));
  if (!o.rule.empty()) f.rule = scale_rule_by_name(o.rule);
  if (!o.tensor_scale.empty() && o.tensor_scale != "auto") {
    const double t = parse_double("--tensor-scale", o.tensor_scale);
    if (!(t > 0))
      throw Error(
          fmt::format("--tensor-scale must be 'auto' or finite and > 0, got {}", o.tensor_scale),
          "e.g. --tensor-scale auto");
    f.tensor_scale = float(t);
  }
  if (!o.tensor_scale.empty() && f.rule != ScaleRule::nearest)
    throw Error(fmt::format("--tensor-scale is for the 'nearest' rule (NVFP4), not '{}'",
                            scale_rule_name(f.rule)),
                "drop --tensor-scale, or use --rule nearest");
  validate_block_format(f);
  return f;
}

}  // namespace fa4sim
