// block_options.h: the block-format options of `fa4sim block` as strings (--format, --elem,
// --scale-format, --rule, --block, --tensor-scale) and their parsing into a BlockFormat with
// fa4sim-style errors (exit 2): the CLI (src/cli/cmd_block.cpp) and the Python module's
// `fa4sim.block_encode()`, `block_decode()`, `block_quantize()` take the same options with the
// same messages.
#pragma once

#include <string>

#include "fa4sim/core/block_scale.h"

namespace fa4sim {

struct BlockFormatOptions {
  std::string format = "mxfp8";
  std::string elem, scale_format, rule, block;
  std::string tensor_scale;  // empty: none; "auto": computed from the input by the caller
};

// --format's block format with the explicit options on top, validated (validate_block_format).
// tensor_scale "auto" leaves the tensor scale at 1: the caller sets it (tensor_scale_from_amax).
BlockFormat parse_block_format(const BlockFormatOptions& o);

}  // namespace fa4sim
