// gpu_upstream.cpp: `fa4sim gpu upstream` (include/fa4sim/gpu/gpu_upstream.h): runs upstream
// FlashAttention-4 through scripts/drivers/fa4_upstream.py and compares it with fa4sim's emulator and CPU
// model. The GPU work happens in the Python driver; everything here runs on the host.
#include "fa4sim/gpu/gpu_upstream.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_attention_report.h"
#include "fa4sim/util/json_input.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/util/error.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/util/progress.h"
#include "fa4sim/util/subprocess.h"

namespace fa4sim {

namespace {

std::string driver_command(const std::string& python, const std::string& args) {
  // A binary copied alone finds no drivers: say so (its silent driver read as "torch not
  // importable" and "printed no JSON").
  const std::string script = upstream_script_path();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec))
    throw Error(
        fmt::format("cannot find the upstream driver '{}'", script),
        "fa4sim reads its drivers from <prefix>/share/fa4sim/drivers next to an installed binary, else "
        "from its source tree's scripts/drivers/: install it (cmake --install) or run the build tree's binary",
        kExitUsage);
  return sh_quote(python) + " " + sh_quote(script) + " " + args;
}

// The driver's stdout (util/subprocess.h); a driver that cannot start is a bad --python.
struct DriverPipe : Pipe {
  explicit DriverPipe(const std::string& cmd) : Pipe(cmd) {
    if (f == nullptr) throw Error("could not start '" + cmd + "'", "check --python", kExitUsage);
  }
};

// The driver's JSON line; an object with "error" when it could not be parsed.
json parse_driver_line(const std::string& line) {
  try {
    json j = json::parse(line);
    if (j.is_object()) return j;
  } catch (const std::exception&) {}
  return json{{"error", "the upstream driver printed no JSON: " + line.substr(0, 300)},
              {"kind", "driver"}};
}

// Maps the driver's error kinds to the CLI's exit codes.
void throw_driver_error(const json& j) {
  const std::string kind = j.value("kind", "");
  const std::string what = j.value("error", std::string("the upstream driver failed"));
  if (kind == "no_gpu") throw Error(what, "fa4sim gpu upstream needs an NVIDIA GPU", kExitNoGpu);
  if (kind == "no_upstream") throw Error(what, kUpstreamInstallHint, kExitUsage);
  throw Error(what, "see the driver's output above (scripts/drivers/fa4_upstream.py)",
              kExitCheckFailed);
}

// An own temporary folder, removed on scope exit (only ever the one mkdtemp made).
struct TempDir {
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/fa4sim-upstream-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr)
      throw Error("cannot create a temporary folder under " + tmpl.substr(0, tmpl.size() - 21),
                  "set TMPDIR to a writable folder");
    path = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

template <typename T>
void write_raw(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
  if (!f) throw Error("cannot write " + path, "check TMPDIR's free space");
}

template <typename T>
std::vector<T> read_raw(const std::string& path, size_t n) {
  std::vector<T> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(T)));
  if (!f || f.gcount() != std::streamsize(n * sizeof(T)))
    throw Error("upstream's output " + path + " is missing or short", "see the driver's messages",
                kExitCheckFailed);
  return v;
}

json upstream_shape_json(const GpuAttnShape& s) {
  return json{{"batch", s.batch},
              {"heads_q", s.heads},
              {"heads_kv", s.kv_heads},
              {"seq_q", s.seq_q},
              {"seq_k", s.seq_k},
              {"head_dim", s.d},
              {"causal", s.causal},
              {"causal_alignment", s.causal_bottom_right ? "bottom-right" : "top-left"}};
}

std::string upstream_fmt_e(double x) {
  return std::isfinite(x) ? fmt::format("{:.3e}", x) : std::string(x > 0 ? "inf" : "nan");
}

// a / b in percent (0 when b = 0): a share of rescale decisions, elements or rows.
double share_pct(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : 100.0 * double(a) / double(b); }

}  // namespace

std::string upstream_script_path() { return drivers_dir() + "/fa4_upstream.py"; }

json upstream_env(const std::string& python) {
  DriverPipe p(driver_command(python, "info") + " 2>/dev/null");
  const std::string line = read_line(p.f);
  p.close();
  return parse_driver_line(line);
}

void upstream_require(const json& env) {
  if (env.contains("error")) throw_driver_error(env);
  if (!env.value("cuda_available", false))
    throw Error(
        "no CUDA device visible to the upstream driver's torch" +
            (env.contains("torch_error") ? " (" + env["torch_error"].get<std::string>() + ")"
                                         : std::string()),
        "fa4sim gpu upstream needs an NVIDIA GPU and torch with CUDA", kExitNoGpu);
  if (!env.value("upstream_importable", false))
    throw Error("upstream FlashAttention-4 is not installed for this python: " +
                    env.value("upstream_error", std::string()),
                kUpstreamInstallHint, kExitUsage);
}

// ---- forward

void upstream_validate(const GpuAttnShape& s, GpuAttnDtype dtype) {
  if (gpu_attn_is_fp8(dtype))
    throw Error(
        std::string("--dtype ") + gpu_attn_dtype_name(dtype) +
            ": upstream refuses it on this GPU: \"FP8 is only supported on SM100 (compute capability "
            "10.x) for FA4 CuTe.\"",
        "use --dtype bf16 or fp16 on sm90; `fa4sim attention --dtype e4m3` models the sm100 FP8 path");
  if (s.d < 8 || s.d > 256 || s.d % 8 != 0)
    throw Error(
        fmt::format(
            "--d {}: upstream refuses it on sm90: \"(head_dim, head_dim_v)=({}, {}) is not "
            "supported on SM90. head_dim and head_dim_v must be between 8 and 256 and divisible "
            "by 8.\"",
            s.d, s.d, s.d),
        "e.g. --d 64 or 128");
  if (s.batch < 1 || s.heads < 1 || s.kv_heads < 1 || s.seq_q < 1 || s.seq_k < 1)
    throw Error("batch, heads and sequence lengths must be >= 1", "check --batch/--heads/--seq");
  if (s.heads % s.kv_heads != 0)
    throw Error(fmt::format("--heads {} is not a multiple of --kv-heads {}", s.heads, s.kv_heads),
                "GQA needs heads_q = g * heads_kv");
}

void upstream_validate_check_size(const GpuAttnShape& s) {
  const double work = 2.0 * s.batch * s.heads * double(s.seq_q) * s.seq_k * s.d;
  if (work > 4e11)
    throw Error(
        "the float64 reference for this shape is too large for a check",
        "checks need batch*heads*seq_q*seq_k*d <= 2e11 (e.g. --heads 2 --seq 8192); time big shapes "
        "with fa4sim gpu upstream bench");
}

GpuAttnTiling upstream_sm90_tiling(int d, bool causal, GpuAttnDtype dtype) {
  GpuAttnTiling t;
  t.model = GpuAttnCpuModel::sm90_mufu;  // upstream's sm90 order, the H200's MUFU
  t.warp_rows = 16;
  t.out_fp16 = dtype == GpuAttnDtype::fp16;
  if (d <= 64) {
    t.block_m = 192, t.block_n = 128;
  } else if (d <= 96) {
    t.block_m = 192, t.block_n = causal ? 128 : 144;
  } else if (d <= 128) {
    t.block_m = 128, t.block_n = 128;
  } else if (d <= 192) {
    t.block_m = 128, t.block_n = 112;  // head_dim_v = head_dim > 128
  } else {
    t.block_m = 128, t.block_n = 80;
  }
  return t;
}

std::vector<UpstreamRunConfig> upstream_suite() {
  std::vector<UpstreamRunConfig> v;
  for (GpuAttnDtype dt : {GpuAttnDtype::bf16, GpuAttnDtype::fp16})
    for (int d : {64, 128})
      for (int causal : {0, 1}) {
        UpstreamRunConfig mha;
        mha.shape = GpuAttnShape{1, 4, 4, 1024, 1024, d, causal != 0, true};
        mha.dtype = dt;
        mha.label = fmt::format("{} d{} {} mha s1024", gpu_attn_dtype_name(dt), d,
                                causal ? "causal" : "full");
        v.push_back(mha);
        UpstreamRunConfig gqa = mha;
        gqa.shape = GpuAttnShape{2, 4, 2, 300, 333, d, causal != 0, true};
        gqa.label = fmt::format("{} d{} {} gqa4:2 300x333", gpu_attn_dtype_name(dt), d,
                                causal ? "causal" : "full");
        gqa.seed = 2;
        v.push_back(gqa);
      }
  for (int causal : {0, 1}) {
    UpstreamRunConfig c;
    c.shape = GpuAttnShape{1, 2, 2, 8192, 8192, 128, causal != 0, true};
    c.label = fmt::format("bf16 d128 {} s8192", causal ? "causal" : "full");
    c.seed = 3;
    v.push_back(c);
  }
  UpstreamRunConfig sharp;
  sharp.shape = GpuAttnShape{1, 2, 1, 8192, 8192, 64, true, true};
  sharp.dtype = GpuAttnDtype::fp16;
  sharp.q_scale = 8;
  sharp.seed = 4;
  sharp.label = "fp16 d64 causal gqa2:1 s8192 q-scale 8";
  v.push_back(sharp);
  return v;
}

std::vector<UpstreamRunConfig> upstream_tricks_suite() {
  std::vector<UpstreamRunConfig> v;
  for (GpuAttnDtype dt : {GpuAttnDtype::bf16, GpuAttnDtype::fp16})
    for (float tau : {0.f, 4.f, 8.f})
      for (double qs : {1.0, 8.0})
        for (int k : {0, 2, 4}) {
          UpstreamRunConfig c;
          const int d = dt == GpuAttnDtype::bf16 ? 64 : 128;
          c.shape = GpuAttnShape{1, 2, 2, 1024, 1024, d, false, true};
          c.dtype = dt;
          c.q_scale = qs;
          c.seed = 5;
          c.tricks = UpstreamTricks{true, tau, 0.f, k};
          c.label = fmt::format("{} d{} tau {:g} q-scale {:g} emu {}/8", gpu_attn_dtype_name(dt), d,
                                tau, qs, k);
          v.push_back(c);
        }
  return v;
}

void upstream_validate_tricks(const UpstreamTricks& t, GpuAttnDtype dtype) {
  if (!std::isfinite(t.tau) || t.tau < 0 || t.tau > 64)
    throw Error(fmt::format("--tau {:g} is out of range", t.tau),
                "0..64 in log2 units (FA4 uses 8 for 16-bit inputs)");
  if (!std::isfinite(t.max_offset) || t.max_offset < 0 || t.max_offset > 64)
    throw Error(fmt::format("--max-offset {:g} is out of range", t.max_offset),
                "0..64 (FA4 uses 0 for 16-bit inputs)");
  if (t.emu_eighths < 0 || t.emu_eighths > 8)
    throw Error(fmt::format("--emu {} is out of range", t.emu_eighths),
                "0..8 eighths of the n8 tiles of a key block");
  const double lim = gpu_attn_p_log2_max(dtype);
  if (double(t.max_offset) + double(t.tau) >= lim)
    throw Error(
        fmt::format(
            "max_offset + tau = {:g} reaches log2(max finite of {}) = {:.3f}: P can saturate",
            double(t.max_offset) + t.tau, gpu_attn_dtype_name(dtype), lim),
        "lower --tau or --max-offset");
}

double lse_error_ulps(double x, double ref) {
  const float a = std::max(float(std::fabs(ref)), 1.0f);
  const double ulp = double(std::nextafter(a, std::numeric_limits<float>::infinity())) - double(a);
  return std::fabs(x - ref) / ulp;
}

namespace {

// Ordered distance of two float32 bit patterns of one sign-magnitude format (ulps); NaN: inf.
double bit_ulps(uint32_t a, uint32_t b, int sign_bit) {
  auto key = [&](uint32_t u) {
    const int64_t mag = int64_t(u & ((uint32_t(1) << sign_bit) - 1u));
    return (u >> sign_bit) & 1u ? -mag : mag;
  };
  return double(std::llabs(key(a) - key(b)));
}

// O and LSE bit identity of upstream's outputs with one CPU model's; the first mismatches when
// `first` is given.
void identity(const UpstreamRunConfig& c, const std::vector<uint16_t>& o_bits,
              const std::vector<float>& lse, const GpuAttnModel& model, bool fp16,
              uint64_t& o_equal, uint64_t& lse_equal, uint64_t* lse_rows, double* lse_max_ulp,
              std::vector<UpstreamRunResult::Mismatch>* first) {
  const Format& of = fp16 ? kFP16 : kBF16;
  const int D = c.shape.d, S = c.shape.seq_q;
  size_t o_listed = 0;
  for (size_t i = 0; i < o_bits.size(); ++i) {
    const uint32_t mb = encode(of, model.o[i], Overflow::ieee);
    if (mb == o_bits[i]) {
      ++o_equal;
    } else if (first != nullptr && o_listed < kUpstreamFirstMismatches) {
      ++o_listed;
      const int64_t row_all = int64_t(i) / D;
      first->push_back({"O", row_all / S, int(row_all % S), int(int64_t(i) % D),
                        double(decode(of, o_bits[i])), double(model.o[i]),
                        bit_ulps(o_bits[i], mb, 15)});
    }
  }
  if (c.tricks.count) return;  // the LSE slots hold counts
  size_t lse_listed = 0;
  for (size_t i = 0; i < lse.size(); ++i) {
    const uint32_t ub = f32_bits(lse[i]), mb = f32_bits(model.lse[i]);
    if (ub == mb) {
      ++lse_equal;
    } else if (first != nullptr && lse_listed < kUpstreamFirstMismatches) {
      ++lse_listed;
      first->push_back({"LSE", int64_t(i) / S, int(int64_t(i) % S), -1, double(lse[i]),
                        double(model.lse[i]), bit_ulps(ub, mb, 31)});
    }
    if (std::isfinite(lse[i]) && std::isfinite(model.lse[i])) {
      if (lse_rows != nullptr) ++*lse_rows;
      if (lse_max_ulp != nullptr) *lse_max_ulp = std::max(*lse_max_ulp, bit_ulps(ub, mb, 31));
    }
  }
}

// The LSE criteria and maxima of a run whose LSE slots hold the LSE (not counts).
bool analyse_lse(const std::vector<float>& lse, const GpuAttnReference& ref,
                 const GpuAttnModel& model, UpstreamRunResult& r) {
  bool empty_rows_agree = true;
  for (size_t i = 0; i < lse.size(); ++i) {
    const bool up_empty = std::isinf(lse[i]) && lse[i] < 0,
               ref_empty = std::isinf(ref.lse[i]) && ref.lse[i] < 0;
    r.empty_rows_upstream += up_empty ? 1 : 0;
    r.empty_rows_ref += ref_empty ? 1 : 0;
    if (up_empty || ref_empty) {
      empty_rows_agree = empty_rows_agree && up_empty == ref_empty;
      continue;
    }
    const double up = lse[i], mo = model.lse[i];
    r.max_abs_lse = std::max(r.max_abs_lse, std::fabs(ref.lse[i]));
    r.lse_upstream_vs_ref = std::max(r.lse_upstream_vs_ref, std::fabs(up - ref.lse[i]));
    r.lse_model_vs_ref = std::max(r.lse_model_vs_ref, std::fabs(mo - ref.lse[i]));
    r.lse_upstream_vs_ref_ulp = std::max(r.lse_upstream_vs_ref_ulp, lse_error_ulps(up, ref.lse[i]));
    r.lse_model_vs_ref_ulp = std::max(r.lse_model_vs_ref_ulp, lse_error_ulps(mo, ref.lse[i]));
    r.lse_upstream_vs_model = std::max(r.lse_upstream_vs_model, std::fabs(up - mo));
    if (std::isnan(up))
      r.lse_upstream_vs_ref = r.lse_upstream_vs_ref_ulp = std::numeric_limits<double>::quiet_NaN();
  }
  return empty_rows_agree &&
         r.lse_upstream_vs_ref_ulp <= r.lse_model_vs_ref_ulp + kUpstreamLseUlpSlack;
}

}  // namespace

UpstreamRunResult upstream_analyse(const UpstreamRunConfig& c, const GpuAttnInputs& in,
                                   const std::vector<uint16_t>& o_bits,
                                   const std::vector<float>& lse, const GpuAttnTiling& tiling,
                                   int threads, bool compare_models) {
  UpstreamRunResult r;
  r.config = c;
  r.tiling = tiling;
  r.ran = true;
  GpuAttnSoftmax sm;
  sm.dtype = c.dtype;
  sm.tau = c.tricks.tau;  // stock: 0, Softmax.online_softmax rescales on every block
  sm.max_offset = c.tricks.max_offset;
  sm.emu_tiles = c.tricks.emu_eighths;
  sm.reverse_blocks = true;
  const GpuAttnReference ref = gpu_attn_reference(c.shape, sm, in, threads);
  const GpuAttnModel model = gpu_attn_cpu_model(c.shape, sm, in, threads, tiling);
  r.row_decisions = model.row_decisions;
  r.row_rescales = model.row_rescales;
  r.warp_decisions = model.warp_decisions;
  r.warp_rescales = model.warp_rescales;
  r.upstream_rel_l2 = gpu_attn_rel_l2_bits(o_bits, tiling.out_fp16, ref.o);
  r.model_rel_l2 = gpu_attn_rel_l2(model.o, ref.o);
  r.ratio = r.upstream_rel_l2 / r.model_rel_l2;
  const Format& of = tiling.out_fp16 ? kFP16 : kBF16;
  r.o_elements = o_bits.size();
  for (size_t i = 0; i < o_bits.size(); ++i)
    r.max_abs_o_vs_model =
        std::max(r.max_abs_o_vs_model, double(std::fabs(decode(of, o_bits[i]) - model.o[i])));
  r.lse_values = c.tricks.count ? 0 : lse.size();
  identity(c, o_bits, lse, model, tiling.out_fp16, r.o_equal_to_model, r.lse_equal_to_model,
           &r.lse_rows, &r.lse_max_ulp_upstream_vs_model, &r.first_mismatches);
  if (compare_models)
    for (GpuAttnCpuModel m : {GpuAttnCpuModel::row_block_cr, GpuAttnCpuModel::sm90_cr,
                              GpuAttnCpuModel::sm90_mufu, GpuAttnCpuModel::sm90_wgmma}) {
      GpuAttnTiling t = tiling;
      t.model = m;
      const GpuAttnModel other =
          m == tiling.model ? model : gpu_attn_cpu_model(c.shape, sm, in, threads, t);
      UpstreamRunResult::ModelShare share{gpu_attn_cpu_model_name(m)};
      identity(c, o_bits, lse, other, tiling.out_fp16, share.o_equal, share.lse_equal, nullptr,
               nullptr, nullptr);
      r.model_shares.push_back(share);
    }
  if (c.tricks
          .count) {  // the LSE slots hold rows + 4096 * warps (Note [Rescale counts through the LSE])
    r.counted = true;
    const int S = c.shape.seq_q, BM = tiling.block_m, W = tiling.warp_rows;
    for (int64_t bh = 0; bh < int64_t(c.shape.batch) * c.shape.heads; ++bh)
      for (int row = 0; row < S; ++row) {
        const double v = lse[size_t(bh * S + row)];
        const double warps = std::floor(v / kUpstreamCountWarpUnit);
        r.gpu_row_rescales += uint64_t(v - warps * kUpstreamCountWarpUnit);
        if ((row % BM) % W == 0) r.gpu_warp_rescales += uint64_t(warps);  // a warp's first row
      }
    r.rows_tol_pp =
        gpu_attn_share_tolerance(share_pct(r.row_rescales, r.row_decisions), r.row_decisions);
    r.warps_tol_pp =
        gpu_attn_share_tolerance(share_pct(r.warp_rescales, r.warp_decisions), r.warp_decisions);
    r.pass = std::isfinite(r.ratio) && std::fabs(r.ratio - 1.0) <= kUpstreamL2RatioTol &&
             std::fabs(share_pct(r.gpu_row_rescales, r.row_decisions) -
                       share_pct(r.row_rescales, r.row_decisions)) <= r.rows_tol_pp &&
             std::fabs(share_pct(r.gpu_warp_rescales, r.warp_decisions) -
                       share_pct(r.warp_rescales, r.warp_decisions)) <= r.warps_tol_pp;
    return r;
  }
  const bool lse_ok = analyse_lse(lse, ref, model, r);
  r.pass = std::isfinite(r.ratio) && std::fabs(r.ratio - 1.0) <= kUpstreamL2RatioTol && lse_ok;
  return r;
}

namespace {

// Seeds each run's inputs, writes them and the driver's manifest under `dir`; returns the inputs.
// The driver's manifest of these runs, files under `dir`.
json check_manifest(const UpstreamCheckOptions& o, const std::string& dir) {
  json manifest = json::array();
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const auto& c = o.runs[i];
    const std::string base = dir + "/r" + std::to_string(i) + "_";
    const json tricks = c.tricks.variant ? json{{"tau", c.tricks.tau},
                                                {"max_offset", c.tricks.max_offset},
                                                {"emu_eighths", c.tricks.emu_eighths},
                                                {"degree", 3},
                                                {"count_rescales", c.tricks.count}}
                                         : json(nullptr);
    manifest.push_back(json{{"id", std::to_string(i)},
                            {"dtype", gpu_attn_dtype_name(c.dtype)},
                            {"tricks", tricks},
                            {"batch", c.shape.batch},
                            {"heads_q", c.shape.heads},
                            {"heads_kv", c.shape.kv_heads},
                            {"seq_q", c.shape.seq_q},
                            {"seq_k", c.shape.seq_k},
                            {"head_dim", c.shape.d},
                            {"causal", c.shape.causal},
                            {"q_scale", c.q_scale},
                            {"seed", c.seed},
                            {"q", base + "q.bin"},
                            {"k", base + "k.bin"},
                            {"v", base + "v.bin"},
                            {"o", base + "o.bin"},
                            {"lse", base + "lse.bin"}});
  }
  return manifest;
}

// Seeds each run's inputs; with a folder, writes them and the driver's manifest there.
std::vector<GpuAttnInputs> write_check_inputs(const UpstreamCheckOptions& o,
                                              const std::string& dir) {
  std::vector<GpuAttnInputs> inputs;
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const auto& c = o.runs[i];
    inputs.push_back(gpu_attn_make_inputs(c.shape, c.dtype, c.q_scale, c.seed));
    if (dir.empty()) continue;
    const std::string base = dir + "/r" + std::to_string(i) + "_";
    write_raw(base + "q.bin", inputs.back().q);
    write_raw(base + "k.bin", inputs.back().k);
    write_raw(base + "v.bin", inputs.back().v);
  }
  if (!dir.empty())
    write_file_atomic(dir + "/manifest.json", check_manifest(o, dir).dump(1) + "\n");
  return inputs;
}

// A manifest entry without its file paths: what must agree between a saved run and this one.
json manifest_key(json e) {
  for (const char* k : {"q", "k", "v", "o", "lse"}) e.erase(k);
  return e;
}

// The driver's answer for these runs: upstream run now (into `dir`, its outputs there as
// r<i>_o.bin / r<i>_lse.bin), or read back from a folder a --save run wrote (o.from_dir).
json driver_answer(const UpstreamCheckOptions& o, const std::string& dir,
                   const std::vector<GpuAttnInputs>& inputs) {
  if (!o.from_dir.empty()) {
    const std::string hint =
        "a folder written by `fa4sim gpu upstream check --save DIR` with the same runs "
        "(scripts/gpu/upstream_save_outputs.sh)";
    const std::string mpath = o.from_dir + "/manifest.json", dpath = o.from_dir + "/driver.json";
    const json saved = read_json_input(mpath, "--from manifest", hint);
    const json here = check_manifest(o, o.from_dir);  // what this check would write
    if (!saved.is_array() || saved.size() != here.size())
      throw Error(fmt::format("--from {}: its manifest holds {} runs, this check {}", o.from_dir,
                              saved.is_array() ? saved.size() : 0, here.size()),
                  hint);
    for (size_t i = 0; i < here.size(); ++i) {
      if (manifest_key(saved[i]) != manifest_key(here[i]))
        throw Error(fmt::format("--from {}: run {} differs: saved {}, asked {}", o.from_dir, i,
                                manifest_key(saved[i]).dump(), manifest_key(here[i]).dump()),
                    hint);
      // The saved inputs, where kept (upstream_save_outputs.sh deletes them), must be this seed's.
      const std::string base = o.from_dir + "/r" + std::to_string(i) + "_";
      std::error_code ec;
      const bool kept = std::filesystem::exists(base + "q.bin", ec);
      if (kept && (read_raw<uint16_t>(base + "q.bin", inputs[i].q.size()) != inputs[i].q ||
                   read_raw<uint16_t>(base + "k.bin", inputs[i].k.size()) != inputs[i].k))
        throw Error(
            fmt::format("--from {}: run {}'s saved inputs are not this seed's", o.from_dir, i),
            hint);
    }
    return read_json_input(dpath, "--from driver answer", hint);
  }
  DriverPipe p(driver_command(o.python, "forward --manifest " + sh_quote(dir + "/manifest.json")));
  const std::string out = read_all(p.f);
  const int rc = p.close();
  const json drv = parse_driver_line(out.substr(0, out.find('\n')));
  if (rc != 0 || drv.contains("error")) throw_driver_error(drv);
  if (!o.save_dir.empty()) write_file_atomic(dir + "/driver.json", drv.dump(1) + "\n");
  return drv;
}

json mismatches_json(const UpstreamRunResult& r) {
  json m = json::array();
  for (const auto& x : r.first_mismatches)
    m.push_back({{"what", x.what},
                 {"bh", x.bh},
                 {"row", x.row},
                 {"col", x.col},
                 {"upstream", x.upstream},
                 {"model", x.model},
                 {"ulps", x.ulps}});
  return m;
}

// One entry of results.runs.
json check_run_json(const UpstreamRunResult& r) {
  const auto& c = r.config;
  json j{{"label", c.label},
         {"shape", upstream_shape_json(c.shape)},
         {"dtype", gpu_attn_dtype_name(c.dtype)},
         {"q_scale", c.q_scale},
         {"seed", c.seed},
         {"kernel", c.tricks.variant ? "variant" : "stock"},
         {"tau", c.tricks.tau},
         {"max_offset", c.tricks.max_offset},
         {"emu_eighths", c.tricks.emu_eighths},
         {"tiling",
          {{"block_m", r.tiling.block_m},
           {"block_n", r.tiling.block_n},
           {"warp_rows", r.tiling.warp_rows},
           {"out", r.tiling.out_fp16 ? "fp16" : "bf16"}}},
         {"ran", r.ran}};
  if (!r.ran) {
    j["error"] = r.error;
    return j;
  }
  j.update(json{{"upstream_rel_l2", r.upstream_rel_l2},
                {"model_rel_l2", r.model_rel_l2},
                {"ratio", r.ratio},
                {"lse_max_abs_upstream_vs_f64", r.lse_upstream_vs_ref},
                {"lse_max_abs_model_vs_f64", r.lse_model_vs_ref},
                {"lse_max_abs_upstream_vs_model", r.lse_upstream_vs_model},
                {"lse_max_ulp_upstream_vs_f64", r.lse_upstream_vs_ref_ulp},
                {"lse_max_ulp_model_vs_f64", r.lse_model_vs_ref_ulp},
                {"lse_max_abs_value", r.max_abs_lse},
                {"empty_rows_upstream", r.empty_rows_upstream},
                {"empty_rows_f64", r.empty_rows_ref},
                {"o_elements", r.o_elements},
                {"o_equal_to_model", r.o_equal_to_model},
                {"o_identical_pct", share_pct(r.o_equal_to_model, r.o_elements)},
                {"o_max_abs_upstream_vs_model", r.max_abs_o_vs_model},
                {"lse_values", r.lse_values},
                {"lse_finite_rows", r.lse_rows},
                {"lse_equal_to_model", r.lse_equal_to_model},
                {"lse_identical_pct", share_pct(r.lse_equal_to_model, r.lse_values)},
                {"lse_max_ulp_upstream_vs_model", r.lse_max_ulp_upstream_vs_model},
                {"cpu_model", gpu_attn_cpu_model_name(r.tiling.model)},
                {"first_mismatches", mismatches_json(r)},
                {"pass", r.pass},
                {"model_rescale",
                 {{"row_decisions", r.row_decisions},
                  {"row_rescales", r.row_rescales},
                  {"warp_decisions", r.warp_decisions},
                  {"warp_rescales", r.warp_rescales},
                  {"warp_rows", r.tiling.warp_rows}}}});
  if (!r.model_shares.empty()) {
    json m = json::array();
    for (const auto& x : r.model_shares)
      m.push_back({{"model", x.model},
                   {"o_equal", x.o_equal},
                   {"o_identical_pct", share_pct(x.o_equal, r.o_elements)},
                   {"lse_equal", x.lse_equal},
                   {"lse_identical_pct", share_pct(x.lse_equal, r.lse_values)}});
    j["model_shares"] = m;
  }
  if (r.counted) {
    j["gpu_rescale"] = {{"row_rescales", r.gpu_row_rescales},
                        {"warp_rescales", r.gpu_warp_rescales},
                        {"rows_tol_pp", r.rows_tol_pp},
                        {"warps_tol_pp", r.warps_tol_pp}};
    j["lse_note"] = "count mode: the LSE output held the rescale counts; LSE criteria not applied";
  }
  return j;
}

// One row of the check's table.
std::vector<std::string> check_run_cells(const UpstreamRunResult& r) {
  const auto& c = r.config;
  if (!r.ran)
    return {c.label, "-",   "refused: " + r.error.substr(0, 60), "", "", "", "", "", "", "",
            "",      "FAIL"};
  const std::string model_shares =
      fmt::format("{:.2f}/{:.2f}", share_pct(r.row_rescales, r.row_decisions),
                  share_pct(r.warp_rescales, r.warp_decisions));
  return {c.label,
          fmt::format("{}x{}", r.tiling.block_m, r.tiling.block_n),
          upstream_fmt_e(r.upstream_rel_l2),
          upstream_fmt_e(r.model_rel_l2),
          fmt::format("{:.4f}", r.ratio),
          r.counted ? std::string("(counts)") : upstream_fmt_e(r.lse_upstream_vs_ref),
          r.counted ? std::string("-") : upstream_fmt_e(r.lse_model_vs_ref),
          r.counted
              ? std::string("-")
              : fmt::format("{:.1f}/{:.1f}", r.lse_upstream_vs_ref_ulp, r.lse_model_vs_ref_ulp),
          fmt::format("{:.3f}", share_pct(r.o_equal_to_model, r.o_elements)),
          r.counted ? std::string("-")
                    : fmt::format("{:.3f} ({:.0f})", share_pct(r.lse_equal_to_model, r.lse_values),
                                  r.lse_max_ulp_upstream_vs_model),
          r.counted ? fmt::format("{} (GPU {:.2f}/{:.2f})", model_shares,
                                  share_pct(r.gpu_row_rescales, r.row_decisions),
                                  share_pct(r.gpu_warp_rescales, r.warp_decisions))
                    : model_shares,
          r.pass ? "ok" : "FAIL"};
}

}  // namespace

json upstream_check_manifest(const UpstreamCheckOptions& o, const std::string& dir) {
  return check_manifest(o, dir);
}

UpstreamCheckResult compute_upstream_check(const UpstreamCheckOptions& o) {
  for (const auto& c : o.runs) {
    upstream_validate(c.shape, c.dtype);
    upstream_validate_check_size(c.shape);
    if (c.tricks.variant) upstream_validate_tricks(c.tricks, c.dtype);
  }
  if (!o.save_dir.empty() && !o.from_dir.empty())
    throw Error("--save and --from exclude each other", "save on the GPU machine, read anywhere");
  if (o.from_dir.empty()) {  // before anything is written
    gpu_attn_device_name();  // exit 3 without a GPU
    upstream_require(upstream_env(o.python));
  }
  std::optional<TempDir> tmp;
  std::string dir;
  if (!o.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.save_dir, ec);
    if (ec || !std::filesystem::is_directory(o.save_dir))
      throw Error("--save: cannot create the folder " + o.save_dir, "give a writable path");
    if (std::filesystem::exists(o.save_dir + "/manifest.json"))
      throw Error("--save: " + o.save_dir + " already holds a saved run", "give a new folder");
    dir = o.save_dir;
  } else if (!o.from_dir.empty()) {
    dir = o.from_dir;
  } else {
    tmp.emplace();
    dir = tmp->path;
  }
  // --from: the inputs are regenerated from the seeds (and compared with the saved ones).
  const std::vector<GpuAttnInputs> inputs =
      write_check_inputs(o, o.from_dir.empty() ? dir : std::string());
  const json drv = driver_answer(o, dir, inputs);
  UpstreamCheckResult res;
  res.env = drv.value("env", json::object());
  for (size_t i = 0; i < o.runs.size(); ++i) {
    const auto& c = o.runs[i];
    json run = json::object();
    for (const auto& x : drv.value("runs", json::array()))
      if (x.value("id", "") == std::to_string(i)) run = x;
    GpuAttnTiling tiling = upstream_sm90_tiling(c.shape.d, c.shape.causal, c.dtype);
    tiling.model = o.model;
    tiling.fma = o.fma;
    if (!run.value("ok", false)) {
      UpstreamRunResult r;
      r.config = c;
      r.tiling = tiling;
      r.error = run.value("error", std::string("no result from the driver"));
      res.runs.push_back(r);
      continue;
    }
    // The driver reports upstream's own tile choice; the model follows it.
    if (run.contains("tile") && run["tile"].size() >= 2) {
      tiling.block_m = run["tile"][0].get<int>();
      tiling.block_n = run["tile"][1].get<int>();
    }
    const std::string base = dir + "/r" + std::to_string(i) + "_";
    const auto o_bits = read_raw<uint16_t>(base + "o.bin", size_t(c.shape.q_elems()));
    const auto lse = read_raw<float>(
        base + "lse.bin", size_t(int64_t(c.shape.batch) * c.shape.heads * c.shape.seq_q));
    UpstreamRunResult r =
        upstream_analyse(c, inputs[i], o_bits, lse, tiling, o.threads, o.compare_models);
    r.first_call_s = run.value("first_call_s", 0.0);
    res.runs.push_back(r);
  }
  return res;
}

Report upstream_check_report(const UpstreamCheckOptions& o, const UpstreamCheckResult& res) {
  Report rep;
  rep.command = "gpu upstream check";
  rep.threads = o.threads;
  Table t{"Upstream FA4 (flash_attn_func, sm90) vs fa4sim's CPU model of it, both against float64",
          {"run", "tile", "upstream rel-L2", "model rel-L2", "ratio", "LSE up-f64", "LSE model-f64",
           "(ulp)", "O = model %", "LSE = model % (max ulp)", "model rescale rows/warps %", "pass"},
          {},
          {}};
  json runs = json::array();
  bool pass = !res.runs.empty();
  Table shares{
      "Bit identity with upstream per CPU model (--compare-models): O elements % / LSE values %",
      {"run", "rowblock-cr", "sm90-cr", "sm90-mufu", "sm90-wgmma"},
      {},
      {}};
  for (const auto& r : res.runs) {
    runs.push_back(check_run_json(r));
    t.rows.push_back(check_run_cells(r));
    pass = pass && r.ran && r.pass;
    for (const auto& m : r.first_mismatches)
      t.notes.push_back(fmt::format(
          "{}: first {} mismatch at bh {} row {}{}: upstream {:.9g}, model {:.9g} ({:.0f} ulp)",
          r.config.label, m.what, m.bh, m.row, m.col >= 0 ? fmt::format(" col {}", m.col) : "",
          m.upstream, m.model, m.ulps));
    if (!r.model_shares.empty()) {
      std::vector<std::string> row{r.config.label};
      for (const auto& m : r.model_shares)
        row.push_back(fmt::format("{:.3f} / {:.3f}", share_pct(m.o_equal, r.o_elements),
                                  share_pct(m.lse_equal, r.lse_values)));
      shares.rows.push_back(row);
    }
  }
  const std::string model_name =
      res.runs.empty() ? "sm90-mufu" : gpu_attn_cpu_model_name(res.runs.front().tiling.model);
  t.notes.push_back(fmt::format(
      "criteria: rel-L2 ratio upstream/model in [{:.2f}, {:.2f}]; upstream's LSE error vs float64 at most the "
      "model's + {:g} float32 ulps (ulps at max(|LSE|, 1), Note [LSE ulps]); the same empty rows. (ulp) = those "
      "LSE errors (upstream/model). O = model %, LSE = model %: bit-identical elements / LSE values (max ulp: "
      "the largest LSE distance, float32 bits). Model = {} (rowblock-cr: fa4sim's RowBlockSim, correctly "
      "rounded MUFU functions; sm90-*: upstream's sm90 softmax order, analysis/sm90_forward.h, with the H200's "
      "MUFU models or correctly rounded ones), upstream's tiling, the run's tau/max_offset/emulated tiles "
      "(stock: tau 0); the GEMMs are not the tensor core's (docs/divergences.md); rescale shares: the model's, "
      "16-row warps",
      1 - kUpstreamL2RatioTol, 1 + kUpstreamL2RatioTol, kUpstreamLseUlpSlack, model_name));
  rep.tables.push_back(t);
  if (!shares.rows.empty()) rep.tables.push_back(shares);
  json params = json::array();
  for (const auto& c : o.runs)
    params.push_back(json{{"label", c.label},
                          {"shape", upstream_shape_json(c.shape)},
                          {"dtype", gpu_attn_dtype_name(c.dtype)},
                          {"q_scale", c.q_scale},
                          {"seed", c.seed},
                          {"variant", c.tricks.variant},
                          {"tau", c.tricks.tau},
                          {"max_offset", c.tricks.max_offset},
                          {"emu_eighths", c.tricks.emu_eighths}});
  rep.params = json{{"runs", params},
                    {"python", o.python},
                    {"cpu_model", gpu_attn_cpu_model_name(o.model)},
                    {"compare_models", o.compare_models},
                    {"fma",
                     {{"exp_argument", o.fma.exp_argument},
                      {"row_sum_init", o.fma.row_sum_init},
                      {"lse", o.fma.lse}}},
                    {"from", o.from_dir},
                    {"save", o.save_dir}};
  rep.results = json{{"env", res.env}, {"runs", runs}, {"pass", pass}};
  return rep;
}

Report run_upstream_check(const UpstreamCheckOptions& o) {
  return upstream_check_report(o, compute_upstream_check(o));
}

// ---- speed of the variants

UpstreamBenchResult compute_upstream_bench(const UpstreamBenchOptions& o) {
  json shapes = json::array(), variants = json::array();
  for (int d : o.ds)
    for (int c : o.causal)
      for (int seq : o.seqs) {
        GpuAttnShape sh{o.batch, o.heads, o.heads, seq, seq, d, c != 0, true};
        upstream_validate(sh, GpuAttnDtype::bf16);
        shapes.push_back(json{{"batch", o.batch},
                              {"heads", o.heads},
                              {"seq", seq},
                              {"head_dim", d},
                              {"causal", c != 0},
                              {"dtype", "bf16"}});
      }
  for (float tau : o.taus)
    for (int k : o.emu_eighths) {
      upstream_validate_tricks(UpstreamTricks{true, tau, 0.f, k}, GpuAttnDtype::bf16);
      variants.push_back(json{{"tau", tau}, {"max_offset", 0}, {"emu_eighths", k}, {"degree", 3}});
    }
  if (o.warmup < 0 || o.iters < 1)
    throw Error("--iters must be >= 1 and --warmup >= 0", "e.g. --iters 20");
  gpu_attn_device_name();  // exit 3 without a GPU
  upstream_require(upstream_env(o.python));
  DriverPipe p(driver_command(
      o.python,
      fmt::format("bench-tricks --warmup {} --iters {} --shapes {} --variants {}", o.warmup,
                  o.iters, sh_quote(shapes.dump()), sh_quote(variants.dump()))));
  const std::string out = read_all(p.f);
  const int rc = p.close();
  const json drv = parse_driver_line(out.substr(0, out.find('\n')));
  if (rc != 0 || drv.contains("error")) throw_driver_error(drv);
  return UpstreamBenchResult{drv.value("env", json::object()), drv.value("rows", json::array())};
}

Report upstream_bench_report(const UpstreamBenchOptions& o, const UpstreamBenchResult& res) {
  Report rep;
  rep.command = "gpu upstream bench";
  rep.params =
      json{{"batch", o.batch},
           {"heads", o.heads},
           {"seqs", o.seqs},
           {"head_dims", o.ds},
           {"causal", o.causal},
           {"taus", o.taus},
           {"emu_eighths", o.emu_eighths},
           {"dtype", "bf16"},
           {"warmup", o.warmup},
           {"iters", o.iters},
           {"python", o.python},
           {"timing",
            "CUDA events around each call, median; per shape: cuDNN, stock, variants in order"}};
  Table t{
      "Upstream FA4's sm90 forward with FA4's softmax tricks (TFLOP/s, median, one run; bf16, B" +
          std::to_string(o.batch) + " H" + std::to_string(o.heads) + ")",
      {"d", "causal", "seq", "kernel", "tau", "emulated", "ms", "TFLOP/s", "vs stock"},
      {},
      {}};
  json rows = res.rows;  // gains "vs_stock" per timing
  for (auto& row : rows) {
    double stock_ms = 0;
    for (const auto& tm : row["timings"])
      if (tm.value("kind", "") == "stock" && tm.contains("ms")) stock_ms = tm["ms"].get<double>();
    for (auto& tm : row["timings"]) {
      const std::string kind = tm.value("kind", "");
      const json tr = tm.value("tricks", json::object());
      std::string name = kind == "cudnn"   ? "SDPA cuDNN"
                         : kind == "stock" ? "upstream stock"
                                           : "variant";
      const std::string tau = kind == "variant" ? fmt::format("{:g}", tr.value("tau", 0.0)) : "";
      const std::string emu =
          kind == "variant" ? fmt::format("{}/8", tr.value("emu_eighths", 0)) : "";
      if (!tm.contains("ms")) {
        t.rows.push_back({std::to_string(row.value("head_dim", 0)),
                          row.value("causal", false) ? "yes" : "no",
                          std::to_string(row.value("seq", 0)), name, tau, emu, "error",
                          tm.value("error", ""), ""});
        continue;
      }
      const double ms = tm["ms"].get<double>();
      if (stock_ms > 0) tm["vs_stock"] = stock_ms / ms;
      t.rows.push_back({std::to_string(row.value("head_dim", 0)),
                        row.value("causal", false) ? "yes" : "no",
                        std::to_string(row.value("seq", 0)), name, tau, emu,
                        fmt::format("{:.3f}", ms), fmt::format("{:.1f}", tm.value("tflops", 0.0)),
                        stock_ms > 0 ? fmt::format("{:+.1f} %", 100.0 * (stock_ms / ms - 1.0))
                                     : std::string("")});
    }
  }
  t.notes.push_back(
      "variant = scripts/drivers/fa4_tricks.py inside upstream's FlashAttentionForwardSm90: threshold tau (O "
      "rescale skipped unless a 16-row warp votes), ex2_emulation degree 3 on k/8 of the n8 tiles");
  t.notes.push_back(
      "FLOPs = 4*B*H*S^2*d, halved when causal; vs stock = stock time / this time - 1");
  rep.tables.push_back(t);
  rep.results = json{{"env", res.env}, {"rows", rows}};
  return rep;
}

Report run_upstream_bench(const UpstreamBenchOptions& o) {
  return upstream_bench_report(o, compute_upstream_bench(o));
}

// ---- exp2

UpstreamExp2Result upstream_exp2_compare_stream(FILE* f, int degree, uint64_t total, int threads,
                                                const std::function<void(uint64_t)>& progress) {
  UpstreamExp2Result r;
  r.degree = degree;
  r.cmp.target =
      GpuVerifyTarget{"upstream-exp2-deg" + std::to_string(degree), gpu::Op::ex2_emu, degree};
  const json head = parse_driver_line(read_line(f));
  if (head.contains("error")) {
    const std::string kind = head.value("kind", "");
    if (kind != "upstream_compile" && kind != "unsupported") throw_driver_error(head);
    r.error = head["error"].get<std::string>();
    if (head.contains("poly")) r.poly = head["poly"].get<std::vector<double>>();
    return r;
  }
  r.compiled = true;
  r.poly = head.value("poly", std::vector<double>{});
  r.compile_s = head.value("compile_s", 0.0);
  constexpr uint64_t kChunk = uint64_t(1) << 24;
  std::vector<uint32_t> bufs[2] = {std::vector<uint32_t>(kChunk), std::vector<uint32_t>(kChunk)};
  std::future<void> pending;
  uint64_t done = 0;
  for (int b = 0; done < total; b ^= 1) {
    const uint64_t n = std::min(kChunk, total - done);
    const size_t got = fread(bufs[b].data(), sizeof(uint32_t), n, f);
    if (got != n)
      throw Error(
          fmt::format("the upstream exp2 stream ended after {} of {} outputs", done + got, total),
          "see the driver's messages above", kExitCheckFailed);
    if (pending.valid()) pending.get();  // the compare of the previous chunk
    pending = std::async(std::launch::async, [&, b, begin = done, n] {
      gpu_verify_compare_chunk(r.cmp.target, begin, bufs[b].data(), n, threads, r.cmp);
    });
    done += n;
    if (progress) progress(done);
  }
  if (pending.valid()) pending.get();
  return r;
}

UpstreamExp2SweepResult compute_upstream_exp2(const UpstreamExp2Options& o) {
  for (int d : o.degrees)
    if (d < 0 || d > 5)
      throw Error(fmt::format("--degree {} is out of range", d),
                  "upstream's POLY_EX2 has degrees 0..5");
  if (o.total_log2 < 8 || o.total_log2 > 32)
    throw Error("--inputs-log2 must be in 8..32", "32 = every float32");
  gpu_attn_device_name();  // exit 3 without a GPU
  UpstreamExp2SweepResult res;
  res.env = upstream_env(o.python);
  upstream_require(res.env);
  const uint64_t total = uint64_t(1) << o.total_log2;
  for (int d : o.degrees) {
    Stopwatch sw;
    Progress bar(fmt::format("upstream exp2 deg {}", d), total);
    const int chunk_log2 = std::min(26, o.total_log2);
    DriverPipe p(
        driver_command(o.python, fmt::format("exp2 --degree {} --total-log2 {} --chunk-log2 {}", d,
                                             o.total_log2, chunk_log2)));
    UpstreamExp2Result r = upstream_exp2_compare_stream(p.f, d, total, o.threads, [&](uint64_t n) {
      if (o.progress) bar.update(n);
    });
    const int rc = p.close();
    if (r.compiled && rc != 0)
      throw Error(fmt::format("the upstream driver exited with {} after degree {}", rc, d),
                  "see its messages above", kExitCheckFailed);
    r.wall_s = sw.seconds();
    res.degrees.push_back(std::move(r));
  }
  return res;
}

namespace {

// One entry of results.degrees.
json exp2_degree_json(const UpstreamExp2Result& r) {
  json fm = json::array();
  for (const auto& m : r.cmp.first)
    fm.push_back({{"input", fmt::format("0x{:08X}", m.input)},
                  {"ex2_emu", fmt::format("0x{:08X}", m.cpu)},
                  {"upstream", fmt::format("0x{:08X}", m.gpu)}});
  json pc = json::object();
  for (int k = 0; k < kInputClasses; ++k)
    pc[input_class_name(InputClass(k))] = {{"inputs", r.cmp.inputs_per_class[k]},
                                           {"mismatches", r.cmp.mismatches[k]}};
  return json{{"degree", r.degree},     {"compiled", r.compiled},
              {"error", r.error},       {"poly", r.poly},
              {"inputs", r.cmp.inputs}, {"mismatches", r.cmp.total_mismatches()},
              {"per_class", pc},        {"first_mismatches", fm},
              {"wall_s", r.wall_s},     {"compile_s", r.compile_s}};
}

}  // namespace

Report upstream_exp2_report(const UpstreamExp2Options& o, const UpstreamExp2SweepResult& res) {
  const uint64_t total = uint64_t(1) << o.total_log2;
  Report rep;
  rep.command = "gpu upstream exp2";
  rep.threads = o.threads;
  rep.params = json{{"degrees", o.degrees}, {"inputs", total}, {"python", o.python}};
  Table t{
      fmt::format(
          "Upstream's ex2_emulation (CuTe DSL, on the GPU) vs fa4sim's ex2_emu, {} inputs each, 0 bits",
          o.total_log2 == 32 ? std::string("all 2^32")
                             : fmt::format("the first 2^{}", o.total_log2)),
      {"degree", "upstream", "NaN", "inf", "zero/sub", "normal", "mismatches", "time s"},
      {},
      {}};
  json degrees = json::array();
  uint64_t mism = 0;
  bool all_compiled = true;
  for (const auto& r : res.degrees) {
    degrees.push_back(exp2_degree_json(r));
    if (!r.compiled) {
      all_compiled = false;
      t.rows.push_back({std::to_string(r.degree), "does not compile", "", "", "", "", "-",
                        fmt::format("{:.1f}", r.wall_s)});
      t.notes.push_back(fmt::format("degree {}: {}", r.degree, r.error));
      continue;
    }
    mism += r.cmp.total_mismatches();
    t.rows.push_back({std::to_string(r.degree), "ran", std::to_string(r.cmp.mismatches[0]),
                      std::to_string(r.cmp.mismatches[1]), std::to_string(r.cmp.mismatches[2]),
                      std::to_string(r.cmp.mismatches[3]), std::to_string(r.cmp.total_mismatches()),
                      fmt::format("{:.1f}", r.wall_s)});
    for (const auto& m : r.cmp.first)
      t.notes.push_back(
          fmt::format("degree {} mismatch: input 0x{:08X} ex2_emu 0x{:08X} upstream 0x{:08X}",
                      r.degree, m.input, m.cpu, m.gpu));
  }
  t.notes.push_back(
      mism == 0
          ? "RESULT: 0 mismatches on every degree upstream's code compiles for"
          : fmt::format("RESULT: {} mismatches: fa4sim's ex2_emu is NOT bit-exact with upstream",
                        mism));
  rep.tables.push_back(t);
  rep.results = json{{"env", res.env},
                     {"degrees", degrees},
                     {"total_mismatches", mism},
                     {"bit_exact", mism == 0},
                     {"all_degrees_compiled", all_compiled}};
  return rep;
}

Report run_upstream_exp2(const UpstreamExp2Options& o) {
  return upstream_exp2_report(o, compute_upstream_exp2(o));
}

}  // namespace fa4sim
