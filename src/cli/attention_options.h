// attention_options.h: the option set of `fa4sim attention`, in one place so that other commands
// that take "the same flags as fa4sim attention" (`fa4sim gpu attention`) add and parse exactly
// these options: add_attention_options() declares them on a CLI::App, parse_attention_options()
// turns the strings into an AttentionConfig with fa4sim-style errors (exit 2).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "fa4sim/util/seed.h"
#include "fa4sim/analysis/attention.h"

namespace fa4sim::cli {

struct AttentionCliOptions {
  std::string batch = "1", heads = "8", kv_heads, seq = "1024", seq_q, seq_k, d = "128";
  bool causal = false;
  std::string softmax_scale, seed = default_seed_text(), q_scale = "1";
  std::string q, k, v;
  std::string dtype = "bf16", preset = "upstream", tau, max_offset, descale = "amax";
  std::string block_n = "128", block_m = "128", warp_rows = "32", exp = "mufu", order = "reverse";
  bool allow_saturation = false;
  bool no_split = false;
};

void add_attention_options(CLI::App* sub, AttentionCliOptions& o);
// `sub` is the subcommand the options were added to (to see which were given explicitly).
AttentionConfig parse_attention_options(const AttentionCliOptions& o, const CLI::App* sub);

}  // namespace fa4sim::cli
