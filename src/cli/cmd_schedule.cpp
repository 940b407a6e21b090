// `fa4sim schedule`: the schedule model's prediction of FA4's forward for a shape, an arch and
// the softmax tricks (include/fa4sim/analysis/schedule.h). With --inputs FILE it predicts every
// configuration of a JSON list in one run (sweeps, scripts/datagen/schedule_fit.py).
#include <map>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/util/error.h"
#include "fa4sim/options/roofline_options.h"

namespace fa4sim::cli {

namespace {

struct ScheduleCli {
  std::string arch = "h200";
  std::vector<std::string> arch_files;
  std::string spec;
  int batch = 4, heads = 32, kv_heads = 0, seq = 4096, seq_k = 0, d = 128, causal = 0;
  double tau = 0, emu_fraction = 0, rescale_share = Tricks{}.rescale_share;
  int degree = 3;
  std::string tile;
  bool no_search = false;
  std::string inputs;
  CommonOptions common;
};

std::vector<ArchSpec> archs_of(const ScheduleCli& c) {
  std::vector<ArchSpec> out;
  for (const auto& name : list_items("--arch", c.arch, "an architecture"))
    out.push_back(name.find('/') != std::string::npos || name.ends_with(".json") ? load_arch_file(name)
                                                                                  : load_known_arch(name));
  for (const auto& f : c.arch_files) out.push_back(load_arch_file(f));
  return out;
}

ScheduleInput input_of(const ScheduleCli& c) {
  ScheduleInput in;
  in.shape = {c.batch, c.heads, c.kv_heads > 0 ? c.kv_heads : c.heads, c.seq, c.seq_k > 0 ? c.seq_k : c.seq, c.d,
              c.causal != 0};
  in.tricks = {c.tau, c.emu_fraction, c.degree, c.rescale_share};
  if (!c.tile.empty()) std::tie(in.tile_m, in.tile_n) = parse_tile(c.tile);
  return in;
}

// --inputs: a JSON list of {arch, batch, heads, heads_kv, seq, seq_k, d, causal, tau, emu_fraction,
// degree, rescale_share, tile: [m, n]}; missing keys take the command line's values.
Report run_inputs(const ScheduleCli& c, const std::string& spec_path) {
  const json list = read_json_file(c.inputs, "inputs file");
  if (!list.is_array()) throw Error(fmt::format("inputs file '{}' is not a JSON list", c.inputs), "give [{...}, ...]");
  Report rep;
  rep.command = "schedule";
  rep.params = json{{"inputs", c.inputs}, {"spec", spec_path}};
  json preds = json::array();
  std::map<std::string, ArchSpec> archs;
  const ScheduleInput defaults = input_of(c);
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const ScheduleInput in = schedule_input_from_json(e, defaults, fmt::format("inputs file '{}': entry {}", c.inputs, i));
    const std::string arch = e.is_object() && e.contains("arch") && e["arch"].is_string() ? e["arch"].get<std::string>() : c.arch;
    if (!archs.count(arch)) {
      ScheduleCli x = c;
      x.arch = arch;
      x.arch_files.clear();
      archs.emplace(arch, archs_of(x).front());
    }
    const ArchSpec& a = archs.at(arch);
    const ScheduleSpec s = load_schedule_spec(spec_path.empty() ? schedule_spec_for_arch(a) : spec_path);
    json p = to_json(predict_schedule(a, s, in));
    p["input"] = e;
    preds.push_back(std::move(p));
  }
  rep.results = json{{"predictions", preds}};
  Table t;
  t.title = fmt::format("schedule model: {} configurations of {}", preds.size(), c.inputs);
  t.columns = {"#", "TFLOP/s", "ms", "binding"};
  for (size_t i = 0; i < preds.size(); ++i)
    t.rows.push_back({fmt::format("{}", i), fmt::format("{:.1f}", preds[i]["tflops"].get<double>()),
                      fmt::format("{:.4f}", preds[i]["ms"].get<double>()), preds[i]["binding"].get<std::string>()});
  rep.tables.push_back(std::move(t));
  return rep;
}

}  // namespace

void add_schedule(CLI::App& root) {
  static ScheduleCli c;
  auto* sub = root.add_subcommand(
      "schedule",
      "Predict FA4's forward time and TFLOP/s on an arch for a shape and the softmax tricks (schedule model: "
      "warps, pipes and MMAs overlapped as the kernel runs them), the binding resource, and the best (tau, fraction)");
  sub->add_option("--arch", c.arch, "Architectures: names from data/archs (h100_sxm, h200, b200, b300) or arch JSON paths, comma-separated")
      ->type_name("NAME[,NAME...]")
      ->capture_default_str();
  sub->add_option("--arch-file", c.arch_files, "Add a custom architecture JSON (schema fa4sim/arch-v1)")->type_name("FILE");
  sub->add_option("--spec", c.spec, "Kernel description (schema fa4sim/schedule-v1; default data/schedule/<sm90|sm100>.json)")
      ->type_name("FILE");
  int_in(sub->add_option("--batch", c.batch, "Batch size"), 1, 65535)->type_name("N")->capture_default_str();
  int_in(sub->add_option("--heads", c.heads, "Query heads"), 1, 4096)->type_name("N")->capture_default_str();
  int_in(sub->add_option("--kv-heads", c.kv_heads, "Key/value heads (GQA; 0 = heads)"), 0, 4096)->type_name("N");
  int_in(sub->add_option("--seq", c.seq, "Sequence length (queries, and keys unless --seq-k)"), 1, 1 << 22)
      ->type_name("S")
      ->capture_default_str();
  int_in(sub->add_option("--seq-k", c.seq_k, "Keys (0 = --seq)"), 0, 1 << 22)->type_name("S");
  int_in(sub->add_option("--d", c.d, "Head dimension: a multiple of 8, at most 256"), 8, 256)->type_name("D")->capture_default_str();
  int_in(sub->add_option("--causal", c.causal, "Causal mask (1) or none (0)"), 0, 1)->type_name("0|1")->capture_default_str();
  log2_knob(sub->add_option("--tau", c.tau, "Conditional rescaling threshold in log2 units (0 = always rescale)"))
      ->capture_default_str();
  checked(sub->add_option("--emu-fraction", c.emu_fraction, "Share of exps emulated on the FMA pipe"), "0..1",
          [](const std::string&, const std::string& v) { parse_emu_fraction(v); })
      ->type_name("F")
      ->capture_default_str();
  int_in(sub->add_option("--degree", c.degree, "Polynomial degree of the emulated exp2"), 0, 5)->type_name("N")->capture_default_str();
  checked(sub->add_option("--rescale-share", c.rescale_share,
                          "With tau > 0: share of iterations in which a warp still rescales O (fa4sim rescale measures it)"),
          "0..1",
          [](const std::string& opt, const std::string& v) {
            const double x = parse_double(opt, v);
            if (!(x >= 0 && x <= 1))
              throw Error(fmt::format("{} = {} is outside [0, 1]", opt, v), "a share of iterations, e.g. 0.02");
          })
      ->type_name("F")
      ->capture_default_str();
  checked(sub->add_option("--tile", c.tile, "Tile MxN instead of the kernel's own: M 64..256 a multiple of 64, N 16..256 a multiple of 16"), "",
          [](const std::string&, const std::string& v) { parse_tile(v); })
      ->type_name("MxN");
  sub->add_flag("--no-search", c.no_search, "Skip the search for the best (tau, fraction)");
  sub->add_option("--inputs", c.inputs, "Predict every configuration of a JSON list instead (keys as the options)")
      ->type_name("FILE");
  add_common_options(sub, c.common);
  sub->callback([] {
    Stopwatch sw;
    check_report_path(c.common.json_path);
    if (!c.inputs.empty()) {
      emit(run_inputs(c, c.spec), c.common.json_path, sw.seconds());
      return;
    }
    ScheduleModelOptions o;
    o.archs = archs_of(c);
    o.spec_path = c.spec;
    o.input = input_of(c);
    o.search = !c.no_search;
    const ScheduleInput& in = o.input;
    o.params = json{{"arch", c.arch}, {"spec", c.spec}, {"batch", in.shape.batch}, {"heads", in.shape.heads},
                    {"kv_heads", in.shape.heads_kv}, {"seq", in.shape.seq_q}, {"seq_k", in.shape.seq_k},
                    {"d", in.shape.d}, {"causal", in.shape.causal}, {"tau", in.tricks.tau},
                    {"emu_fraction", in.tricks.emu_fraction}, {"degree", in.tricks.degree},
                    {"rescale_share", in.tricks.rescale_share}, {"tile", c.tile}, {"search", o.search}};
    const ScheduleModelResult r = compute_schedule(o);
    Report rep = schedule_report(o, r);
    emit(rep, c.common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
