// `fa4sim attention`: the end-to-end attention-forward model (library: attention.h), its shared
// option set (include/fa4sim/options/attention_options.h, declared by attention_flags.h). The
// report's section: src/report/section_attention.cpp.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "attention_flags.h"
#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/attention.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"
#include "fa4sim/util/report.h"
#include "fa4sim/analysis/rescale.h"

namespace fa4sim::cli {

void add_attention(CLI::App& root) {
  static AttentionCliOptions o;
  static CommonOptions common;
  auto* sub = root.add_subcommand(
      "attention",
      "Model one attention forward pass as FA4's sm100 kernel computes it (FP8/16-bit inputs with "
      "descales, GQA, causal, key tiles, conditional rescaling) against two float64 references");
  add_attention_options(sub, o);
  add_common_options(sub, common);
  sub->callback([sub] {
    AttentionConfig c = parse_attention_options(o, given_in(sub));
    c.threads = resolved_threads(common);
    if (!o.save_o.empty()) {
      if (c.seq_q.size() != 1 || c.dtypes.size() != 1 || c.taus.size() > 1)
        throw Error("--save-o writes one run's output",
                    "give one --seq, one --dtype and at most one --tau");
      c.keep_outputs = true;
    }
    validate_attention_config(c);
    check_report_path(common.json_path);
    if (!o.save_o.empty()) check_output_path(o.save_o, "--save-o");
    Stopwatch sw;
    const AttentionResult r = run_attention(c);
    if (!o.save_o.empty()) {
      const AttentionRun& run = r.runs.front();
      write_npy_f32(
          o.save_o,
          {uint64_t(run.batch), uint64_t(run.seq_q), uint64_t(run.heads), uint64_t(run.d)}, run.o);
    }
    emit(r.report, common.json_path, sw.seconds());
  });
}

// ---- `fa4sim check`

namespace {

// `fa4sim check --p-format`: the block-scaled P's rows (block_check.cpp); exit 1 when unsafe.
void run_block_check(const std::string& p_format, const std::string& scale_rule,
                     const std::string& p_rule, const std::string& dtype,
                     const std::string& preset_in, const std::string& tau,
                     const std::string& max_offset, const std::string& json_path) {
  if (!dtype.empty())
    throw Error("--dtype and --p-format check different things",
                "give one: --dtype for an element-wise P, --p-format for a block-scaled one");
  std::vector<std::string> presets;
  for (const auto& p : attention_presets()) presets.push_back(p.name);
  const std::string preset = parse_choice("--preset", preset_in, presets);
  std::vector<ScaleRule> rules;
  if (!scale_rule.empty())
    for (const auto& r : list_items("--scale-rule", scale_rule, "a name"))
      rules.push_back(scale_rule_by_name(parse_choice("--scale-rule", r, scale_rule_names())));
  const PRule pr = parse_choice("--p-rule", p_rule, {"max-offset", "two-level"}) == "two-level"
                       ? PRule::two_level
                       : PRule::max_offset;
  std::vector<double> taus;
  std::optional<double> mo;
  if (!tau.empty()) taus = parse_double_list("--tau", tau);
  if (!max_offset.empty()) mo = parse_double("--max-offset", max_offset);
  check_report_path(json_path);
  Stopwatch sw;
  const BlockCheckResult res = compute_block_check(list_items("--p-format", p_format, "a name"),
                                                   rules, pr, preset, taus, mo);
  emit(block_check_report(res), json_path, sw.seconds());
  if (!res.all_safe)
    throw Error("unsafe block-scaled P", "a block scale saturates: P clips; see the table",
                kExitCheckFailed);
}

}  // namespace

void add_check(CLI::App& root) {
  struct CheckOptions {
    std::string dtype, tau, max_offset, preset = "upstream";
    std::string p_format, scale_rule, p_rule = "max-offset";
  };
  static CheckOptions o;
  static CommonOptions common;
  auto* sub = root.add_subcommand(
      "check",
      "The kernel's safety condition max_offset + tau < log2(dtype_max): worst P, verdict, largest "
      "safe tau. Exits 1 when unsafe (for CI scripts)");
  sub->add_option("--dtype", o.dtype, "Input dtype(s): bf16, fp16, e4m3, e5m2 (default: all four)")
      ->type_name("DTYPE[,DTYPE...]");
  log2_knobs(
      sub->add_option("--tau", o.tau,
                      "Rescale threshold(s) in log2 units (default: the preset's per dtype)"))
      ->type_name("T[,T...]");
  log2_knob(sub->add_option("--max-offset", o.max_offset,
                            "P offset in log2 units (default: the preset's per dtype)"))
      ->type_name("M");
  sub->add_option("--preset", o.preset, "upstream (current) or fp8-tau4 (before issue #2716)")
      ->type_name("NAME")
      ->capture_default_str();
  sub->add_option(
         "--p-format", o.p_format,
         "Check a block-scaled P instead: mxfp8, mxfp8-e5m2, mxfp6, mxfp6-e3m2, mxfp4, nvfp4 "
         "(when its block scale saturates or flushes, per scale rule)")
      ->type_name("NAME[,NAME...]");
  sub->add_option("--scale-rule", o.scale_rule,
                  "With --p-format: the scale rules to check (default all the scale can hold)")
      ->type_name("RULE[,RULE...]");
  sub->add_option("--p-rule", o.p_rule,
                  "With --p-format: max-offset (FA4) or two-level (SageAttention3)")
      ->type_name("max-offset|two-level")
      ->capture_default_str();
  sub->add_option("--json", common.json_path,
                  "Write the JSON report to FILE (atomically), or to stdout with '-'")
      ->type_name("FILE|-")
      ->check(non_empty_path());
  sub->callback([sub] {
    if (!o.p_format.empty())
      return run_block_check(o.p_format, o.scale_rule, o.p_rule, o.dtype, o.preset, o.tau,
                             o.max_offset, common.json_path);
    for (const char* opt : {"--scale-rule", "--p-rule"})
      if (sub->count(opt) > 0)
        throw Error(fmt::format("{} applies to a block-scaled P", opt),
                    "give --p-format (e.g. --p-format nvfp4)");
    std::vector<const Format*> dtypes;
    if (!o.dtype.empty())
      dtypes = parse_dtype_list("--dtype", o.dtype, FormatRole::attention_input);
    std::vector<std::string> presets;
    for (const auto& p : attention_presets()) presets.push_back(p.name);
    const std::string preset = parse_choice("--preset", o.preset, presets);
    std::vector<double> taus;
    std::optional<double> mo;
    if (!o.tau.empty()) taus = parse_double_list("--tau", o.tau);
    if (!o.max_offset.empty()) mo = parse_double("--max-offset", o.max_offset);
    check_report_path(common.json_path);
    Stopwatch sw;
    const Report r = run_check(dtypes, preset, taus, mo);
    emit(r, common.json_path, sw.seconds());
    if (!r.results["safe"].get<bool>()) {
      std::vector<std::string> unsafe;  // each dtype once, however many of its taus are unsafe
      for (const auto& row : r.results["rows"])
        if (!row["safe"].get<bool>() && std::find(unsafe.begin(), unsafe.end(),
                                                  row["dtype"].get<std::string>()) == unsafe.end())
          unsafe.push_back(row["dtype"].get<std::string>());
      std::string which;
      for (const auto& d : unsafe) which += (which.empty() ? "" : ", ") + d;
      throw Error(fmt::format("unsafe configuration for {}", which),
                  "P can exceed the dtype's max and saturate; see the table", kExitCheckFailed);
    }
  });
}

}  // namespace fa4sim::cli
