// gpu_wgmma_verify.cpp: the host side of `fa4sim gpu verify --what wgmma` (see gpu_wgmma_verify.h).
#include "fa4sim/gpu/gpu_wgmma_verify.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "fa4sim/gpu/gpu_verify.h"
#include "fa4sim/gpu/wgmma_inputs.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

namespace fa4sim {

namespace {

std::string wgmma_hex(uint32_t v, int digits) { return fmt::format("0x{:0{}X}", v, digits); }

std::string bits_list(const std::vector<uint16_t>& v, int digits) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + fmt::format("{:0{}X}", v[i], digits);
  return s;
}

// Regenerates the inputs of one output element and recomputes the set's model on the host.
GpuWgmmaMismatch describe(WgmmaInput in, uint64_t seed, const WgmmaModel& m,
                          const gpu::WgmmaMismatch& at) {
  GpuWgmmaMismatch r;
  r.at = at;
  const int k = wgmma_k(in);
  for (int i = 0; i < k; ++i) {
    r.a.push_back(wgmma_input_ab(in, seed, at.tile, 0, at.row, i));
    r.b.push_back(wgmma_input_ab(in, seed, at.tile, 1, at.col, i));
  }
  r.c = wgmma_input_c(in, seed, at.tile, at.row, at.col);
  r.host_model = wgmma_dot(m, in, r.a.data(), r.b.data(), r.c);
  return r;
}

GpuWgmmaResult verify_one(const GpuWgmmaOptions& o, WgmmaInput in) {
  const WgmmaCandidate* cands = wgmma_candidates(in);
  std::vector<WgmmaModel> models;
  for (int s = 0; s < kWgmmaCandidateSets; ++s) models.push_back(cands[s].model);
  const gpu::WgmmaDeviceResult dev =
      gpu::run_wgmma_verify(in, o.seed, o.tiles, models, o.sample_tiles);
  GpuWgmmaResult r;
  r.input = in;
  r.tiles = o.tiles;
  r.dots = o.tiles * kWgmmaTileDots;
  r.wall_s = dev.wall_s;
  r.exact_class_mismatches = dev.exact_class_mismatches;
  for (int s = 0; s < kWgmmaCandidateSets; ++s) {
    GpuWgmmaSet set;
    set.name = cands[s].name;
    set.what = cands[s].what;
    set.per_class.assign(dev.mismatches.begin() + s * kWgmmaClasses,
                         dev.mismatches.begin() + (s + 1) * kWgmmaClasses);
    for (uint64_t v : set.per_class) set.total += v;
    auto first = dev.first[size_t(s)];
    std::sort(first.begin(), first.end(), [](const auto& x, const auto& y) {
      return std::tie(x.tile, x.row, x.col) < std::tie(y.tile, y.row, y.col);
    });
    for (const auto& at : first) set.first.push_back(describe(in, o.seed, models[size_t(s)], at));
    r.sets.push_back(std::move(set));
  }
  const std::vector<uint16_t> rows = wgmma_sample_rows(in, o.seed, dev.sample_d);
  r.sample_dots = dev.sample_d.size();
  r.host_sample_mismatches = wgmma_sample_mismatches(in, models[0], rows);
  if (!o.sample_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.sample_dir, ec);
    r.sample_path = fmt::format("{}/wgmma-{}.npy", o.sample_dir, wgmma_input_name(in));
    const uint64_t width = uint64_t(2 * wgmma_k(in) + 4);
    write_npy(r.sample_path, NpyType::u16, {r.sample_dots, width}, rows.data(), rows.size() * 2);
  }
  return r;
}

json set_json(const GpuWgmmaSet& s, WgmmaInput in) {
  json per_class = json::object();
  for (int c = 0; c < kWgmmaClasses; ++c) per_class[wgmma_class_name(c)] = s.per_class[size_t(c)];
  json first = json::array();
  const int digits = wgmma_k(in) == 16 ? 4 : 2;
  for (const auto& m : s.first)
    first.push_back({{"tile", m.at.tile},
                     {"class", wgmma_class_name(int(m.at.tile % kWgmmaClasses))},
                     {"row", m.at.row},
                     {"col", m.at.col},
                     {"a", bits_list(m.a, digits)},
                     {"b", bits_list(m.b, digits)},
                     {"c", wgmma_hex(m.c, 8)},
                     {"gpu", wgmma_hex(m.at.gpu, 8)},
                     {"model_device", wgmma_hex(m.at.model, 8)},
                     {"model_host", wgmma_hex(m.host_model, 8)}});
  return {{"set", s.name},
          {"what", s.what},
          {"mismatches", s.total},
          {"per_class", per_class},
          {"first_mismatches", first}};
}

}  // namespace

const WgmmaCandidate* wgmma_candidates(WgmmaInput in) {
  return wgmma_k(in) == 16 ? kWgmmaCandidates16 : kWgmmaCandidates8;
}

std::vector<uint16_t> wgmma_sample_rows(WgmmaInput in, uint64_t seed,
                                        const std::vector<uint32_t>& d) {
  const int k = wgmma_k(in);
  const size_t width = size_t(2 * k + 4);
  std::vector<uint16_t> rows(d.size() * width);
  for (size_t i = 0; i < d.size(); ++i) {
    const uint64_t tile = i / kWgmmaTileDots;
    const int row = int(i % kWgmmaTileDots) / 64, col = int(i % 64);
    uint16_t* p = rows.data() + i * width;
    for (int j = 0; j < k; ++j) {
      p[j] = wgmma_input_ab(in, seed, tile, 0, row, j);
      p[k + j] = wgmma_input_ab(in, seed, tile, 1, col, j);
    }
    const uint32_t c = wgmma_input_c(in, seed, tile, row, col);
    p[2 * k] = uint16_t(c & 0xFFFFu);
    p[2 * k + 1] = uint16_t(c >> 16);
    p[2 * k + 2] = uint16_t(d[i] & 0xFFFFu);
    p[2 * k + 3] = uint16_t(d[i] >> 16);
  }
  return rows;
}

uint64_t wgmma_sample_mismatches(WgmmaInput in, const WgmmaModel& model,
                                 const std::vector<uint16_t>& rows) {
  const int k = wgmma_k(in);
  const size_t width = size_t(2 * k + 4);
  uint64_t bad = 0;
  for (size_t i = 0; i + width <= rows.size(); i += width) {
    const uint16_t* p = rows.data() + i;
    const uint32_t c = p[2 * k] | (uint32_t(p[2 * k + 1]) << 16);
    const uint32_t d = p[2 * k + 2] | (uint32_t(p[2 * k + 3]) << 16);
    bad += wgmma_dot(model, in, p, p + k, c) != d;
  }
  return bad;
}

std::vector<GpuWgmmaResult> run_gpu_wgmma_verify(const GpuWgmmaOptions& o) {
  if (o.tiles == 0)
    throw Error("--tiles 0: nothing to verify", "give at least 1 tile (4096 dot products)");
  gpu::require();
  std::vector<GpuWgmmaResult> out;
  for (WgmmaInput in : o.inputs) out.push_back(verify_one(o, in));
  return out;
}

bool gpu_wgmma_passed(const std::vector<GpuWgmmaResult>& results) {
  for (const auto& r : results)
    if (r.sets.empty() || r.sets[0].total != 0 || r.exact_class_mismatches != 0 ||
        r.host_sample_mismatches != 0)
      return false;
  return true;
}

Report gpu_wgmma_report(const GpuWgmmaOptions& o, const std::vector<GpuWgmmaResult>& results,
                        const gpu::DeviceInfo& dev) {
  Report rep;
  rep.command = "gpu verify";
  rep.params = {
      {"what", "wgmma"}, {"tiles", o.tiles}, {"seed", o.seed}, {"sample_tiles", o.sample_tiles}};
  Table t{
      "wgmma.mma_async m64n64 (f32 accumulation) vs the CPU model, every output, 0 bits tolerance",
      {"type", "set", "model", "dot products", "mismatches",
       "per class (exact normal cancel spread subnormal tiny special overflow)"},
      {},
      {}};
  Table firsts{"First mismatches (sorted by tile, row, col; inputs regenerated on the host)",
               {"type", "set", "tile", "class", "row", "col", "C", "GPU", "model", "a | b"},
               {},
               {}};
  json types = json::array();
  for (const auto& r : results) {
    json sets = json::array();
    const int digits = wgmma_k(r.input) == 16 ? 4 : 2;
    for (const auto& s : r.sets) {
      sets.push_back(set_json(s, r.input));
      std::string pc;
      for (uint64_t v : s.per_class) pc += (pc.empty() ? "" : " ") + std::to_string(v);
      t.rows.push_back({wgmma_input_name(r.input), s.name, s.what, std::to_string(r.dots),
                        std::to_string(s.total), pc});
      for (size_t i = 0; i < s.first.size() && i < 4; ++i) {
        const auto& m = s.first[i];
        firsts.rows.push_back(
            {wgmma_input_name(r.input), s.name, std::to_string(m.at.tile),
             wgmma_class_name(int(m.at.tile % kWgmmaClasses)), std::to_string(m.at.row),
             std::to_string(m.at.col), wgmma_hex(m.c, 8), wgmma_hex(m.at.gpu, 8),
             wgmma_hex(m.host_model, 8), bits_list(m.a, digits) + " | " + bits_list(m.b, digits)});
      }
    }
    types.push_back({{"type", wgmma_input_name(r.input)},
                     {"k", wgmma_k(r.input)},
                     {"tiles", r.tiles},
                     {"dot_products", r.dots},
                     {"sets", sets},
                     {"exact_class_mismatches", r.exact_class_mismatches},
                     {"sample_dot_products", r.sample_dots},
                     {"host_model_sample_mismatches", r.host_sample_mismatches},
                     {"sample_file", r.sample_path},
                     {"device_s", r.wall_s}});
    t.notes.push_back(fmt::format(
        "{}: {:.2f} s on the device; class exact vs the exact sum: {} mismatches (nonzero = a harness "
        "fault); host build of set 0 vs the GPU on the first {} dot products: {} mismatches{}",
        wgmma_input_name(r.input), r.wall_s, r.exact_class_mismatches, r.sample_dots,
        r.host_sample_mismatches, r.sample_path.empty() ? "" : " (sample: " + r.sample_path + ")"));
  }
  const bool pass = gpu_wgmma_passed(results);
  t.notes.push_back(
      "Set 0 (mmasim) is fa4sim's model (core/wgmma_model.h); the other sets are "
      "alternatives the run discriminates (docs/wgmma.md).");
  t.notes.push_back(
      pass
          ? std::string(
                "RESULT: 0 mismatches for set 0: the CPU model is bit-exact on these inputs.")
          : std::string(
                "RESULT: the CPU model (set 0) is NOT bit-exact on these inputs, or the harness failed."));
  rep.results = {{"device", gpu_device_json(dev)}, {"types", types}, {"bit_exact", pass}};
  rep.tables.push_back(std::move(t));
  if (!firsts.rows.empty()) rep.tables.push_back(std::move(firsts));
  return rep;
}

}  // namespace fa4sim
