// online_softmax.cpp: the host-side pieces of online_softmax.h that name things and check
// options (the row-block simulator is analysis/row_block_sim.h).
#include "fa4sim/core/online_softmax.h"

#include <cmath>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

void check_log2_knob(const std::string& opt, double v) {
  const std::string name = opt.substr(opt.find_first_not_of('-'));
  const std::string hint = fmt::format("valid: 0..{:g} in log2 units", kMaxLog2Knob);
  if (std::isnan(v)) throw Error(fmt::format("{} must be a number, got nan", opt), hint);
  if (v < 0)
    throw Error(fmt::format("{} {:g} is negative: {} must be finite and >= 0", opt, v, name), hint);
  if (!(v <= kMaxLog2Knob))
    throw Error(fmt::format("{} {:g} is out of range: {} must be finite and >= 0, at most {:g}",
                            opt, v, name, kMaxLog2Knob),
                hint + ": P reaches 2^(max_offset + tau)");
}

const char* block_order_name(BlockOrder o) {
  return o == BlockOrder::reverse ? "reverse" : "forward";
}

}  // namespace fa4sim
