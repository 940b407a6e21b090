// roofline_data.cpp: the roofline's inputs read and checked: the architectures (data/archs),
// the exp pipe model (data/exp_pipe_model.json), the tuning table (data/fa4_tuning.json) and a
// measured file (--measured). The model is roofline.cpp, the report roofline_report.cpp.
#include "fa4sim/analysis/roofline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fa4sim/util/paths.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/core/exp2_schedule.h"

namespace fa4sim {

namespace fs = std::filesystem;

// ---- small helpers

std::string roofline_data_dir() {
  return data_dir();  // Note [Install layout] in paths.h
}

// The schedule model's files are read through the one JSON reader too (Note [JSON input depth]).
json read_json_file(const std::string& path, const std::string& what) {
  return read_json_input(path, what);
}

namespace {

// Strict field access: every failure names the field by its path.
struct Fields {
  const json& obj;
  std::string origin, path;  // path prefix, e.g. "fields.sm_count"

  std::string at(const std::string& key) const { return path.empty() ? key : path + "." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& what,
                         const std::string& hint) const {
    throw Error(fmt::format("{}: field '{}' {}", origin, at(key), what), hint);
  }
  const json& need(const std::string& key) const {
    if (!obj.is_object() || !obj.contains(key))
      fail(key, "is missing", "see data/archs/b200.json for the format");
    return obj.at(key);
  }
  std::string str(const std::string& key, bool required = true) const {
    if (!required && !obj.contains(key)) return {};
    const json& v = need(key);
    if (!v.is_string())
      fail(key, fmt::format("must be a string, got {}", v.type_name()), "quote it");
    return v.get<std::string>();
  }
  bool boolean(const std::string& key) const {
    const json& v = need(key);
    if (!v.is_boolean())
      fail(key, fmt::format("must be true or false, got {}", v.type_name()), "e.g. false");
    return v.get<bool>();
  }
  double number(const std::string& key) const {
    const json& v = need(key);
    if (!v.is_number())
      fail(key, fmt::format("must be a number, got {}", v.type_name()), "e.g. 16");
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(key, "must be finite", "e.g. 16");
    return x;
  }
  // Rates and counts: > 0, and within 1e-3..1e9 so that every time, ratio and cell the
  // roofline derives from them stays finite and readable (a rate of 1e-308 made cells inf).
  double positive(const std::string& key) const {
    const double x = number(key);
    if (!(x > 0)) fail(key, fmt::format("must be > 0, got {}", x), "rates and counts are positive");
    if (x < 1e-3 || x > 1e9)
      fail(key, fmt::format("must be in 0.001..1e9, got {:g}", x),
           "rates are per clock per SM, e.g. 16");
    return x;
  }
  int positive_int(const std::string& key, int hi) const {
    const double x = positive(key);
    if (x != std::floor(x) || x > hi)
      fail(key, fmt::format("must be an integer in 1..{}, got {}", hi, x), "e.g. 132");
    return static_cast<int>(x);
  }
};

constexpr const char* kArchFields[] = {"sm_count",
                                       "sm_clock_mhz",
                                       "mma_bf16_flop_per_clk_sm",
                                       "mma_fp8_flop_per_clk_sm",
                                       "mufu_ex2_per_clk_sm",
                                       "fp32_fma_lanes_per_clk_sm",
                                       "alu_lanes_per_clk_sm",
                                       "packed_f32x2",
                                       "smsp_per_sm",
                                       "issue_slots_per_clk_smsp",
                                       "smem_bytes_per_clk_sm",
                                       "mma_fp6_flop_per_clk_sm",
                                       "mma_fp4_flop_per_clk_sm"};

}  // namespace

// ---- architectures

ArchSpec parse_arch(const json& j, const std::string& origin) {
  const std::string where = fmt::format("arch file '{}'", origin);
  if (!j.is_object())
    throw Error(fmt::format("{}: must be a JSON object, got {}", where, j.type_name()),
                "see data/archs/b200.json for the format");
  Fields top{j, where, ""};
  const std::string schema = top.str("schema");
  if (schema != "fa4sim/arch-v1")
    top.fail("schema", fmt::format("must be \"fa4sim/arch-v1\", got \"{}\"", schema),
             "see data/archs/b200.json");
  ArchSpec a;
  a.origin = origin;
  a.name = top.str("name");
  if (a.name.empty()) top.fail("name", "must not be empty", "e.g. \"my_gpu\"");
  a.full_name = top.str("full_name", false);
  a.sm_arch = top.str("sm_arch", false);
  const json& fields = top.need("fields");
  if (!fields.is_object())
    top.fail("fields", fmt::format("must be an object, got {}", fields.type_name()),
             "see data/archs/b200.json");
  for (const auto& [key, v] : fields.items()) {
    bool known = false;
    for (const char* k : kArchFields) known = known || key == k;
    if (!known) {
      std::string list;
      for (const char* k : kArchFields) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error(fmt::format("{}: unknown field 'fields.{}'", where, key),
                  "known fields: " + list);
    }
  }
  Fields fs{fields, where, "fields"};
  // Each field is {"value": ..., "source": "...", "assumption": bool}.
  auto entry = [&](const char* key) {
    const json& e = fs.need(key);
    if (!e.is_object())
      fs.fail(key,
              fmt::format("must be an object {{\"value\", \"source\", \"assumption\"}}, got {}",
                          e.type_name()),
              "every number carries its source");
    Fields f{e, where, fs.at(key)};
    if (f.str("source").empty())
      f.fail("source", "must not be empty", "say where the number comes from");
    if (f.boolean("assumption")) a.assumptions.push_back(key);
    return f;
  };
  a.sm_count = entry("sm_count").positive_int("value", 100000);
  a.sm_clock_mhz = entry("sm_clock_mhz").positive("value");
  a.mma_bf16_flop_per_clk_sm = entry("mma_bf16_flop_per_clk_sm").positive("value");
  {
    Fields f = entry("mma_fp8_flop_per_clk_sm");
    if (!f.need("value").is_null()) a.mma_fp8_flop_per_clk_sm = f.positive("value");
  }
  // The block-scaled rates are optional fields (an arch file without them has no such MMA).
  for (auto [key, out] : {std::pair{"mma_fp6_flop_per_clk_sm", &a.mma_fp6_flop_per_clk_sm},
                          std::pair{"mma_fp4_flop_per_clk_sm", &a.mma_fp4_flop_per_clk_sm}})
    if (fields.contains(key)) {
      Fields f = entry(key);
      if (!f.need("value").is_null()) *out = f.positive("value");
    }
  a.mufu_ex2_per_clk_sm = entry("mufu_ex2_per_clk_sm").positive("value");
  a.fp32_fma_lanes_per_clk_sm = entry("fp32_fma_lanes_per_clk_sm").positive("value");
  a.alu_lanes_per_clk_sm = entry("alu_lanes_per_clk_sm").positive("value");
  a.packed_f32x2 = entry("packed_f32x2").boolean("value");
  a.smsp_per_sm = entry("smsp_per_sm").positive_int("value", 64);
  a.issue_slots_per_clk_smsp = entry("issue_slots_per_clk_smsp").positive("value");
  a.smem_bytes_per_clk_sm = entry("smem_bytes_per_clk_sm").positive("value");
  a.fields = fields;
  return a;
}

ArchSpec load_arch_file(const std::string& path) {
  return parse_arch(read_json_input(path, "arch file"), path);
}

std::vector<std::string> known_arch_names() {
  static const std::vector<std::string> kOrder = {"a100", "h100_sxm", "h200", "b200", "b300"};
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(roofline_data_dir() + "/archs", ec))
    if (e.path().extension() == ".json") found.push_back(e.path().stem().string());
  if (found.empty())
    throw Error(fmt::format("no architecture files in '{}/archs'", roofline_data_dir()),
                "set FA4SIM_DATA_DIR to fa4sim's data/ directory");
  std::sort(found.begin(), found.end(), [&](const std::string& x, const std::string& y) {
    const auto ix = std::find(kOrder.begin(), kOrder.end(), x) - kOrder.begin();
    const auto iy = std::find(kOrder.begin(), kOrder.end(), y) - kOrder.begin();
    return ix != iy ? ix < iy : x < y;
  });
  return found;
}

ArchSpec load_known_arch(const std::string& name) {
  return load_arch_file(roofline_data_dir() + "/archs/" + name + ".json");
}

// ---- exp pipe model
PipeModelSpec parse_pipe_model(const json& j, const std::string& origin) {
  const std::string where = fmt::format("pipe model '{}'", origin);
  Fields top{j, where, ""};
  if (!j.is_object()) throw Error(where + ": must be a JSON object");
  if (top.str("schema") != "fa4sim/exp-pipe-model-v1")
    top.fail("schema", "must be \"fa4sim/exp-pipe-model-v1\"", "see data/exp_pipe_model.json");
  PipeModelSpec s;
  s.source = top.str("source");
  auto list = [&](const char* key) {
    std::vector<PipeOp> out;
    const json& arr = top.need(key);
    if (!arr.is_array()) top.fail(key, "must be an array", "see data/exp_pipe_model.json");
    for (size_t i = 0; i < arr.size(); ++i) {
      Fields f{arr[i], where, fmt::format("{}[{}]", key, i)};
      PipeOp op;
      op.op = f.str("op");
      op.pipe = f.str("pipe");
      if (op.pipe != "fma" && op.pipe != "alu" && op.pipe != "mufu")
        f.fail("pipe", fmt::format("must be fma, alu or mufu, got \"{}\"", op.pipe),
               "see the note in the file");
      const json& c = f.need("count");
      if (c.is_string() && c.get<std::string>() == "degree") {
        op.per_degree = true;
      } else {
        op.count = f.number("count");
        if (op.count < 0) f.fail("count", "must be >= 0", "instructions per element");
      }
      if (arr[i].contains("min_degree")) {
        const double md = f.number("min_degree");
        if (md != std::floor(md) || md < 0 || md > 5)
          f.fail("min_degree", "must be an integer 0..5", "e.g. 1");
        op.min_degree = static_cast<int>(md);
      }
      op.packable = f.boolean("packable");
      op.assumption = f.boolean("assumption");
      op.source = f.str("source");
      out.push_back(op);
    }
    return out;
  };
  s.hardware_exp2 = list("hardware_exp2");
  s.emulated_exp2 = list("emulated_exp2");
  s.softmax_other = list("softmax_other");
  return s;
}

PipeModelSpec load_pipe_model() {
  const std::string path = roofline_data_dir() + "/exp_pipe_model.json";
  return parse_pipe_model(read_json_input(path, "pipe model"), path);
}

// ---- schedule
TuningTable load_tuning() {
  const std::string path = roofline_data_dir() + "/fa4_tuning.json";
  const json j = read_json_input(path, "tuning table");
  const std::string where = fmt::format("tuning table '{}'", path);
  Fields top{j, where, ""};
  TuningTable t;
  t.source = top.str("source");
  t.row_width = top.positive_int("row_width", 4096);
  const json& arr = top.need("entries");
  if (!arr.is_array()) top.fail("entries", "must be an array", "see data/fa4_tuning.json");
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields f{arr[i], where, fmt::format("entries[{}]", i)};
    TuningEntry e;
    e.use_2cta = f.boolean("use_2cta");
    e.causal = f.boolean("causal");
    e.is_sm103 = f.boolean("is_sm103");
    e.head_dim_padded = f.positive_int("head_dim_padded", 4096);
    e.dtype = f.str("dtype");
    e.freq = static_cast<int>(f.number("freq"));
    e.res = static_cast<int>(f.number("res"));
    e.start_frg = static_cast<int>(f.number("start_frg"));
    if (arr[i].contains("seed_fraction")) e.seed_fraction = f.number("seed_fraction");
    e.seed_case = f.str("seed_case", false);
    if (!schedule_valid(t.row_width, e.freq, e.res, e.start_frg))
      f.fail("freq",
             fmt::format("({}, {}, {}) is not a valid schedule", e.freq, e.res, e.start_frg),
             "need freq >= 0 and 0 <= res < freq");
    t.entries.push_back(e);
  }
  return t;
}

// ---- measured file

MeasuredFile parse_measured(const json& j, const std::string& origin) {
  const std::string where = fmt::format("measured file '{}'", origin);
  if (!j.is_object())
    throw Error(fmt::format("{}: must be a JSON object", where), "see fa4sim roofline --help");
  Fields top{j, where, ""};
  if (top.str("schema") != "fa4sim/bench-exp-v1")
    top.fail("schema", "must be \"fa4sim/bench-exp-v1\"", "see README, fa4sim roofline --measured");
  MeasuredFile m;
  m.origin = origin;
  m.device = top.str("device");
  m.arch = top.str("arch");
  m.provenance = j.contains("provenance") ? j.at("provenance") : json::object();
  const json& pts = top.need("points");
  if (!pts.is_array() || pts.empty())
    top.fail("points", "must be a non-empty array", "one entry per (degree, f)");
  for (size_t i = 0; i < pts.size(); ++i) {
    Fields f{pts[i], where, fmt::format("points[{}]", i)};
    MeasuredPoint p;
    const double deg = f.number("degree");
    if (deg != std::floor(deg) || deg < 0 || deg > 5)
      f.fail("degree", fmt::format("must be an integer 0..5, got {}", deg), "e.g. 3");
    p.degree = static_cast<int>(deg);
    p.f = f.number("f");
    if (p.f < 0 || p.f > 1)
      f.fail("f", fmt::format("must be in [0, 1], got {}", p.f), "the emulated fraction");
    p.exps_per_clk_sm = f.positive("exps_per_clk_sm");
    m.points.push_back(p);
  }
  return m;
}

MeasuredFile load_measured(const std::string& path) {
  return parse_measured(read_json_input(path, "measured file"), path);
}

}  // namespace fa4sim
