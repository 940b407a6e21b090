// attention_options.h: the option set of `fa4sim attention` as strings, and their parsing into
// an AttentionConfig with fa4sim-style errors (exit 2), in one place: `fa4sim attention`, the
// commands that take "the same flags as fa4sim attention" (`fa4sim gpu attention`; both declare
// them with src/cli/attention_flags.h) and the Python module's `fa4sim.attention()`.
#pragma once

#include <string>

#include "fa4sim/analysis/attention.h"
#include "fa4sim/options/common.h"
#include "fa4sim/util/seed.h"

namespace fa4sim {

inline constexpr int64_t kAttentionMaxDim = 1 << 20;  // --batch, --seq, --seq-q, --seq-k

struct AttentionCliOptions {
  std::string batch = "1", heads = "8", kv_heads, seq = "1024", seq_q, seq_k, d = "128";
  bool causal = false;
  std::string softmax_scale, seed = default_seed_text(), q_scale = "1";
  std::string q, k, v;
  std::string dtype = "bf16", preset = "upstream", tau, max_offset, descale = "amax";
  std::string block_n = "128", block_m = "128", warp_rows = "32", exp = "mufu", order = "reverse";
  bool allow_saturation = false;
  bool no_split = false;
  // block-scaled operands (Note [Block-scaled attention])
  std::string qk_format, p_format, v_format, scale_rule, block, p_rule = "max-offset";
  std::string tensor_scale = "amax", masked_exp = "schedule";
  std::string save_o;  // `fa4sim attention --save-o`: the CLI writes the output there
};

// `given` says which options were given explicitly (geometry options do not apply to .npy inputs).
AttentionConfig parse_attention_options(const AttentionCliOptions& o, const OptionGiven& given);

}  // namespace fa4sim
