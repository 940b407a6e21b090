// attention_options.cpp: `fa4sim attention`'s options parsed into an AttentionConfig (see
// attention_options.h).
#include "fa4sim/options/attention_options.h"

#include <fmt/format.h>

#include "fa4sim/analysis/row_sim.h"
#include "fa4sim/util/error.h"

namespace fa4sim {

namespace {
constexpr int64_t kMaxDim = kAttentionMaxDim;
}  // namespace

AttentionConfig parse_attention_options(const AttentionCliOptions& o, const OptionGiven& given) {
  AttentionConfig c;
  const bool files = !o.q.empty() || !o.k.empty() || !o.v.empty();
  if (files)
    for (const char* opt :
         {"--batch", "--heads", "--kv-heads", "--seq", "--seq-q", "--seq-k", "--d"})
      if (given(opt))
        throw Error(fmt::format("{} does not apply to .npy inputs", opt),
                    "the geometry comes from the shapes of --q/--k/--v");
  c.batch = int(parse_int("--batch", o.batch, 1, kMaxDim));
  c.heads = int(parse_int("--heads", o.heads, 1, 4096));
  c.kv_heads = o.kv_heads.empty() ? c.heads : int(parse_int("--kv-heads", o.kv_heads, 1, 4096));
  c.d = int(parse_int("--d", o.d, 1, 1024));
  if (!o.seq_q.empty() && given("--seq")) throw Error("give --seq or --seq-q, not both");
  if (!o.seq_q.empty()) {
    c.seq_q = {int(parse_int("--seq-q", o.seq_q, 1, kMaxDim))};
  } else {
    c.seq_q.clear();
    for (auto s : parse_int_list("--seq", o.seq, 1, kMaxDim)) c.seq_q.push_back(int(s));
  }
  if (!o.seq_k.empty()) c.seq_k = int(parse_int("--seq-k", o.seq_k, 1, kMaxDim));
  c.causal = o.causal;
  if (!o.softmax_scale.empty()) c.softmax_scale = parse_double("--softmax-scale", o.softmax_scale);
  if (files && given("--seed"))
    throw Error("--seed does not apply to .npy inputs",
                "it seeds the generated N(0,1) Q, K, V; drop it");
  c.seed = uint64_t(parse_int("--seed", o.seed, 0, int64_t(1) << 53));
  c.q_scale = parse_double("--q-scale", o.q_scale);
  c.q_path = o.q, c.k_path = o.k, c.v_path = o.v;
  c.dtypes = parse_dtype_list("--dtype", o.dtype, FormatRole::attention_input);
  std::vector<std::string> presets;
  for (const auto& p : attention_presets()) presets.push_back(p.name);
  c.preset = parse_choice("--preset", o.preset, presets);
  if (!o.tau.empty()) c.taus = parse_double_list("--tau", o.tau);
  if (!o.max_offset.empty()) c.max_offset = parse_double("--max-offset", o.max_offset);
  c.descale_one = parse_choice("--descale", o.descale, {"amax", "one"}) == "one";
  c.block_n = int(parse_int("--block-n", o.block_n, 1, 4096));
  c.block_m = int(parse_int("--block-m", o.block_m, 1, 4096));
  c.warp_rows = int(parse_int("--warp-rows", o.warp_rows, 1, 4096));
  c.exp2 = parse_exp2_choice(o.exp);
  if (parse_choice("--masked-exp", o.masked_exp, {"schedule", "mufu"}) == "mufu") {
    if (c.exp2.mode != Exp2Mode::schedule)
      throw Error("--masked-exp mufu applies to --exp schedule:FREQ[,RES[,START_FRG]]",
                  "the other --exp modes use one exp2 for every tile");
    c.exp2.masked_tiles_mufu = true;
  }
  c.order = parse_choice("--order", o.order, {"reverse", "forward"}) == "reverse"
                ? BlockOrder::reverse
                : BlockOrder::forward;
  c.allow_saturation = o.allow_saturation;
  c.split = !o.no_split;
  c.qk_format = o.qk_format, c.p_format = o.p_format, c.v_format = o.v_format;
  if (!o.scale_rule.empty())
    c.scale_rule =
        scale_rule_by_name(parse_choice("--scale-rule", o.scale_rule, scale_rule_names()));
  if (!o.block.empty()) c.block = int(parse_int("--scale-block", o.block, 1, 4096));
  c.p_rule = parse_choice("--p-rule", o.p_rule, {"max-offset", "two-level"}) == "two-level"
                 ? PRule::two_level
                 : PRule::max_offset;
  c.tensor_scale_one = parse_choice("--tensor-scale", o.tensor_scale, {"amax", "one"}) == "one";
  if (!c.block_mode())
    for (const char* opt : {"--scale-rule", "--scale-block", "--p-rule", "--tensor-scale"})
      if (given(opt))
        throw Error(fmt::format("{} applies to block-scaled operands", opt),
                    "give --qk-format, --p-format or --v-format (e.g. --p-format nvfp4)");
  return c;
}

}  // namespace fa4sim
