// block_report.h: `fa4sim block` as library functions: encode an array into a block-scaled
// format (codes, scales, decoded values) or decode it back, and the error summary of the
// round trip. The CLI (src/cli/cmd_block.cpp) only parses options and calls these.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fa4sim/core/block_scale.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

struct BlockQuantized {
  std::vector<uint8_t> codes;   // one per input element
  std::vector<uint8_t> scales;  // one per block, row-major
  std::vector<float> decoded;   // fl32(element * scale)
  double encode_s = 0;          // wall time of the encoding alone (one thread)
};

// Encodes `in` (rows of row_len) and decodes the result.
BlockQuantized block_quantize(const BlockFormat& f, std::span<const float> in, size_t row_len);

// The summary of a round trip: blocks, NaN-scale blocks, elements that saturated (|x / scale|
// beyond the element's max finite) or flushed to zero, max |error|, relative RMS error
// ||decoded - x|| / ||x|| over the finite blocks.
Report block_report(const BlockFormat& f, std::span<const float> in, size_t row_len,
                    const BlockQuantized& q);

}  // namespace fa4sim
