// schedule_options.cpp: `fa4sim schedule`'s options into the schedule model's (see
// schedule_options.h).
#include "fa4sim/options/schedule_options.h"

#include <map>

#include <fmt/format.h>

#include "fa4sim/options/roofline_options.h"
#include "fa4sim/util/error.h"

namespace fa4sim {

std::vector<ArchSpec> schedule_archs(const std::string& arch,
                                     const std::vector<std::string>& arch_files,
                                     const std::string& opt) {
  std::vector<ArchSpec> out;
  for (const auto& name : list_items(opt, arch, "an architecture"))
    out.push_back(load_arch_item(opt, name, known_arch_names()));
  for (const auto& f : arch_files) out.push_back(load_arch_file(f));
  return out;
}

ScheduleInput schedule_input(const ScheduleCliOptions& c) {
  ScheduleInput in;
  in.shape = {c.batch,
              c.heads,
              c.kv_heads > 0 ? c.kv_heads : c.heads,
              c.seq,
              c.seq_k > 0 ? c.seq_k : c.seq,
              c.d,
              c.causal != 0};
  in.tricks = {c.tau, c.emu_fraction, c.degree, c.rescale_share};
  in.clock_mhz = c.clock_mhz;
  if (!c.tile.empty()) std::tie(in.tile_m, in.tile_n) = parse_tile(c.tile);
  return in;
}

ScheduleModelOptions schedule_model_options(const ScheduleCliOptions& c) {
  ScheduleModelOptions o;
  o.archs = schedule_archs(c.arch, c.arch_files);
  o.spec_path = c.spec;
  o.kernel_factors = c.kernel_factors;
  o.input = schedule_input(c);
  o.search = !c.no_search;
  const ScheduleInput& in = o.input;
  o.params = json{{"arch", c.arch},
                  {"spec", c.spec},
                  {"batch", in.shape.batch},
                  {"heads", in.shape.heads},
                  {"kv_heads", in.shape.heads_kv},
                  {"seq", in.shape.seq_q},
                  {"seq_k", in.shape.seq_k},
                  {"d", in.shape.d},
                  {"causal", in.shape.causal},
                  {"tau", in.tricks.tau},
                  {"emu_fraction", in.tricks.emu_fraction},
                  {"degree", in.tricks.degree},
                  {"rescale_share", in.tricks.rescale_share},
                  {"clock_mhz", in.clock_mhz},
                  {"tile", c.tile},
                  {"search", o.search},
                  {"kernel_factors", c.kernel_factors}};
  return o;
}

Report schedule_inputs_report(const ScheduleCliOptions& c, const json& list,
                              const std::string& source, const std::string& where) {
  if (!list.is_array())
    throw Error(fmt::format("{} is not a JSON list", where), "give [{...}, ...]");
  Report rep;
  rep.command = "schedule";
  rep.params = json{{"inputs", source}, {"spec", c.spec}, {"kernel_factors", c.kernel_factors}};
  json preds = json::array();
  std::map<std::string, ArchSpec> archs;
  std::map<std::string, std::optional<KernelFactors>> factors;
  const ScheduleInput defaults = schedule_input(c);
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    const ScheduleInput in =
        schedule_input_from_json(e, defaults, fmt::format("{}: entry {}", where, i));
    const std::string arch = e.is_object() && e.contains("arch") && e["arch"].is_string()
                                 ? e["arch"].get<std::string>()
                                 : c.arch;
    if (!archs.count(arch))
      archs.emplace(
          arch, schedule_archs(arch, {}, fmt::format("arch in {}, entry {}:", where, i)).front());
    const ArchSpec& a = archs.at(arch);
    const ScheduleSpec s = load_schedule_spec(c.spec.empty() ? schedule_spec_for_arch(a) : c.spec);
    if (!factors.count(arch))
      factors.emplace(arch, resolve_kernel_factors(c.spec, c.kernel_factors, a));
    const std::optional<KernelFactors>& kf = factors.at(arch);
    json p = to_json(predict_schedule(a, s, in, kf ? &*kf : nullptr));
    p["input"] = e;
    preds.push_back(std::move(p));
  }
  rep.results = json{{"predictions", preds}};
  Table t;
  t.title = fmt::format("schedule model: {} configurations of {}", preds.size(), source);
  t.columns = {"#", "TFLOP/s", "ms", "binding"};
  for (size_t i = 0; i < preds.size(); ++i)
    t.rows.push_back({fmt::format("{}", i), fmt::format("{:.1f}", preds[i]["tflops"].get<double>()),
                      fmt::format("{:.4f}", preds[i]["ms"].get<double>()),
                      preds[i]["binding"].get<std::string>()});
  rep.tables.push_back(std::move(t));
  return rep;
}

}  // namespace fa4sim
