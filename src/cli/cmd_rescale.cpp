// `fa4sim rescale`: online softmax with conditional rescaling; how often rows and warps rescale,
// what it costs in output error, and where FP8 saturates. Parses and validates the options, then
// calls run_rescale() (src/analysis/rescale.cpp). Also the `fa4sim report` section `rescale`.
#include <cstdio>

#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/analysis/rescale.h"

namespace fa4sim::cli {

namespace {

struct RescaleCliOptions {
  std::string tau = "0,8";
  std::string dtype = "bf16";
  std::string max_offset;
  std::string dist = "normal:1.5";
  std::string rows = "256", keys = "8192", block = "128", d = "128";
  std::string v_dist = "normal";
  std::string exp = "mufu";
  std::string scale;
  std::string order = "auto";
  std::string warp_rows = "32";
  std::string seed = "1";
  std::string seeds = "1";
  std::string rng = "fa4sim";
  bool allow_saturation = false;
  bool counts_only = false;
  CommonOptions common;
};

constexpr int64_t kMaxDim = 1 << 20;

std::vector<double> parse_taus(const std::string& s) {
  std::vector<double> taus;
  for (const auto& t : split(s, ',')) {
    if (t == "nan" || t == "NaN" || t == "-nan")
      throw Error(fmt::format("--tau must be a number, got '{}'", t), "e.g. --tau 0,8");
    taus.push_back(parse_double("--tau", t));
  }
  return taus;
}

RescaleConfig to_config(const RescaleCliOptions& o, const CLI::App* sub) {
  RescaleConfig c;
  c.taus = parse_taus(o.tau);
  c.dtypes.clear();
  for (const auto& t : split(o.dtype, ','))
    c.dtypes.push_back(parse_choice("--dtype", t, {"bf16", "fp16", "e4m3", "e5m2", "fp32"}));
  if (!o.max_offset.empty()) c.max_offset = parse_double("--max-offset", o.max_offset);
  for (const auto& t : split(o.dist, ',')) c.dists.push_back(parse_score_dist(t));
  c.rows = int(parse_int("--rows", o.rows, 1, kMaxDim));
  c.keys = int(parse_int("--keys", o.keys, 1, kMaxDim));
  c.block = int(parse_int("--block-n", o.block, 1, kMaxDim));
  c.d = int(parse_int("--d", o.d, 1, 4096));
  c.rows_set = sub->count("--rows") > 0;
  c.keys_set = sub->count("--keys") > 0;
  c.v_dist = parse_choice("--v-dist", o.v_dist, {"normal", "uniform"});
  c.exp2 = parse_exp2_choice(o.exp);
  if (!o.scale.empty()) c.scale = parse_double("--softmax-scale", o.scale);
  const std::string order = parse_choice("--order", o.order, {"auto", "reverse", "forward"});
  c.order = order == "auto" ? OrderChoice::auto_
            : order == "reverse" ? OrderChoice::reverse : OrderChoice::forward;
  c.warp_rows = int(parse_int("--warp-rows", o.warp_rows, 1, 1024));
  c.seed = uint64_t(parse_int("--seed", o.seed, 0, int64_t(1) << 53));
  c.seeds = int(parse_int("--seeds", o.seeds, 1, 10000));
  if (o.rng == "fa4sim") {
    c.rng = RngChoice::Kind::fa4sim;
  } else if (o.rng.rfind("numpy:", 0) == 0) {
    c.rng = RngChoice::Kind::numpy;
    const uint64_t s = uint64_t(parse_int("--rng numpy:SEED", o.rng.substr(6), 0, int64_t(1) << 53));
    if (sub->count("--seed") > 0 && s != c.seed)
      throw Error(fmt::format("--rng {} and --seed {} disagree", o.rng, o.seed),
                  "with --rng numpy:SEED the seed is SEED; leave out --seed");
    c.seed = s;
  } else {
    throw Error(fmt::format("unknown --rng '{}'", o.rng), "valid: fa4sim, numpy:SEED (e.g. numpy:1)");
  }
  c.allow_saturation = o.allow_saturation;
  c.counts_only = o.counts_only;
  c.threads = o.common.threads;
  return c;
}

}  // namespace

void add_rescale(CLI::App& root) {
  static RescaleCliOptions o;
  auto* sub = root.add_subcommand(
      "rescale",
      "Online softmax with conditional rescaling (FA4's tau): rescale counts per row and per "
      "warp, output and LSE error vs float64, FP8 saturation");
  checked(sub->add_option("--tau", o.tau, "Rescale thresholds in log2 units (0 = rescale on every increase)"),
          fmt::format("0..{:g}", kMaxLog2Knob), [](const std::string& opt, const std::string& v) {
            for (double t : parse_taus(v)) check_log2_knob(opt, t);
          })
      ->type_name("T[,T...]")
      ->capture_default_str();
  sub->add_option("--dtype", o.dtype, "P's MMA input types: bf16, fp16, e4m3, e5m2 (fp32 = no cast)")
      ->type_name("DTYPE[,DTYPE...]")
      ->capture_default_str();
  log2_knob(sub->add_option("--max-offset", o.max_offset,
                            "P is scaled by 2^M before the cast, M in log2 units (default: the kernel's, 8 "
                            "for FP8, 0 otherwise)"))
      ->type_name("M");
  sub->add_option("--dist", o.dist,
                  "Score distributions (log2 units): normal:SIGMA, rise:TOTAL[:SIGMA] (N(0,SIGMA^2) + "
                  "TOTAL*k/keys, SIGMA 1.5), peaked (N(0,6^2)), file:PATH.npy (2-D float32)")
      ->type_name("DIST[,DIST...]")
      ->capture_default_str();
  int_in(sub->add_option("--rows", o.rows, "Query rows"), 1, kMaxDim)->type_name("N")->capture_default_str();
  int_in(sub->add_option("--keys", o.keys, "Keys per row"), 1, kMaxDim)->type_name("N")->capture_default_str();
  int_in(sub->add_option("--block-n", o.block, "Keys per block (a ragged last block is masked)"), 1, kMaxDim)
      ->type_name("N")
      ->capture_default_str();
  add_hidden_alias(sub, "--block", o.block);
  int_in(sub->add_option("--d", o.d, "Head dimension (columns of V)"), 1, 4096)->type_name("D")->capture_default_str();
  sub->add_option("--v-dist", o.v_dist, "V's entries: normal (N(0,1)) or uniform (U[-1,1))")
      ->type_name("DIST")
      ->capture_default_str();
  sub->add_option("--exp", o.exp,
                  "exp2 for P: exact (float64 argument, rounded once), mufu (correctly rounded float32), "
                  "emu0..emu5 (ex2_emulation of that degree), schedule:FREQ,RES,START_FRG (upstream's mix)")
      ->type_name("MODE")
      ->capture_default_str();
  positive(sub->add_option("--softmax-scale", o.scale,
                           "Softmax scale (natural units): scale_log2 = SCALE * log2(e); default: scores "
                           "are log2 units (scale_log2 = 1)"),
           "e.g. 0.0883883 = 1/sqrt(128)")
      ->type_name("X");
  add_hidden_alias(sub, "--scale", o.scale);
  sub->add_option("--order", o.order,
                  "Key-block order: forward (the article's), reverse (the sm100 kernel's), auto = "
                  "forward for synthetic scores, reverse for file: scores")
      ->type_name("ORDER")
      ->capture_default_str();
  int_in(sub->add_option("--warp-rows", o.warp_rows, "Rows per warp for the rescale vote (sm100: 32)"), 1, 1024)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--seed", o.seed, "First seed"), 0, int64_t(1) << 53)->type_name("S")->capture_default_str();
  int_in(sub->add_option("--seeds", o.seeds, "Repeat over N seeds (S..S+N-1): mean, sd, min, max"), 1, 10000)
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--rng", o.rng,
                  "Generator: fa4sim (own, thread-count independent) or numpy:SEED (NumPy's "
                  "default_rng(SEED) streams, bit for bit: the seed article's draws; SEED 0..2^53)")
      ->type_name("GEN")
      ->capture_default_str();
  sub->add_flag("--allow-saturation", o.allow_saturation,
                "Run (tau, dtype) pairs that break max_offset + tau < log2(dtype_max) (to reproduce "
                "upstream issue #2716)");
  sub->add_flag("--counts-only", o.counts_only,
                "Only count rescales and saturations (no P @ V, no reference, no errors)");
  add_common_options(sub, o.common);
  sub->callback([sub] {
    Stopwatch sw;
    const RescaleConfig c = to_config(o, sub);
    validate_rescale_config(c);
    check_report_path(o.common.json_path);
    const Report r = run_rescale(c);
    emit(r, o.common.json_path, sw.seconds());
  });
}

// ---- `fa4sim report` section

namespace {

std::string cell(const json& v, const char* f) {
  if (v.is_null()) return "-";
  if (v.is_object())
    return fmt::format(fmt::runtime(f), v["mean"].get<double>()) + " ± " +
           fmt::format(fmt::runtime(f), v["sd"].get<double>());
  return fmt::format(fmt::runtime(f), v.get<double>());
}

const json* find_run(const Report& r, const std::string& dist, double tau, const std::string& dtype) {
  for (const auto& run : r.results["runs"])
    if (run["dist"] == dist && run["tau"].get<double>() == tau && run["dtype"] == dtype) return &run;
  return nullptr;
}

// The two score distributions of the error tables.
const std::vector<std::string> kErrorDists = {"normal:1.5", "peaked"};
const std::vector<std::string> kErrorDistNames = {"iid N(0, 1.5²)", "peaked N(0, 6²)"};

// Rescale counts, 20 seeds of fa4sim's generator and NumPy's default_rng(1).
std::string counts_section(ReportContext& ctx) {
  const std::vector<std::string> dists1 = {"normal:1.5", "peaked", "rise:24", "rise:96"};
  const std::vector<std::string> names1 = {"iid N(0, 1.5²)", "iid N(0, 6²)", "noise + rise of 24",
                                           "noise + rise of 96"};
  const double pub1[4][4] = {{6.2, 67, 0, 0}, {6.1, 67, 0.7, 19}, {54, 100, 3.3, 35}, {95, 100, 16, 83}};
  auto counts_cfg = [&](RngChoice::Kind rng, int seeds) {
    RescaleConfig c;
    for (const auto& d : dists1) c.dists.push_back(parse_score_dist(d));
    c.counts_only = true;
    c.seeds = seeds;
    c.rng = rng;
    c.threads = ctx.threads;
    return c;
  };
  Stopwatch sw1;
  Report r20 = run_rescale(counts_cfg(RngChoice::Kind::fa4sim, 20));
  ctx.write(r20, "rescale_counts_20seeds.json", sw1.seconds());
  Stopwatch sw1n;
  Report rnp = run_rescale(counts_cfg(RngChoice::Kind::numpy, 1));
  ctx.write(rnp, "rescale_counts_numpy1.json", sw1n.seconds());
  Table t1;
  t1.title = "Rescale counts, 256 x 8192, 128-key blocks (%: published / fa4sim 20 seeds mean ± sd / "
             "fa4sim --rng numpy:1)";
  t1.columns = {"scores", "τ=0 rows", "τ=0 warps", "τ=8 rows", "τ=8 warps"};
  for (size_t i = 0; i < dists1.size(); ++i) {
    std::vector<std::string> row = {names1[i]};
    for (int j = 0; j < 4; ++j) {
      const double tau = j < 2 ? 0.0 : 8.0;
      const char* key = j % 2 == 0 ? "rows_pct" : "warps_pct";
      const json* a = find_run(r20, dists1[i], tau, "bf16");
      const json* b = find_run(rnp, dists1[i], tau, "bf16");
      row.push_back(fmt::format("{:g} / {} / {}", pub1[i][j], a ? cell((*a)[key], "{:.2f}") : "?",
                                b ? cell((*b)[key], "{:.1f}") : "?"));
    }
    t1.rows.push_back(row);
  }
  t1.notes.push_back("Command: `fa4sim rescale --dist normal:1.5,peaked,rise:24,rise:96 --counts-only "
                     "--seeds 20` and the same with `--rng numpy:1 --seeds 1`.");
  // i.i.d. scores: block j (0-based) holds the row's running max with probability 1 / (j + 1).
  double expect_iid = 0;
  for (int j = 1; j < 64; ++j) expect_iid += 1.0 / (j + 1);
  t1.notes.push_back(fmt::format(
      "For i.i.d. scores and tau 0 the expected rows % is (1/2 + ... + 1/64) / 63 = {:.2f} %: the "
      "published 6.2 / 6.1 are single draws (NumPy's default_rng(1) gives 6.24 / 6.09, as above).",
      100.0 * expect_iid / 63.0));
  return render_markdown(t1) + "\n";

}

// bf16 output error, and the one-shot experiment.
std::string bf16_error_section(ReportContext& ctx) {
  auto err_cfg = [&](RngChoice::Kind rng) {
    RescaleConfig c;
    c.dists = {parse_score_dist("normal:1.5"), parse_score_dist("peaked")};
    c.rng = rng;
    c.threads = ctx.threads;
    return c;
  };
  Stopwatch sw2;
  Report e_np = run_rescale(err_cfg(RngChoice::Kind::numpy));
  ctx.write(e_np, "rescale_bf16_numpy1.json", sw2.seconds());
  Stopwatch sw2b;
  Report e_own = run_rescale(err_cfg(RngChoice::Kind::fa4sim));
  ctx.write(e_own, "rescale_bf16_seed1.json", sw2b.seconds());
  Table t2;
  t2.title = "bf16 output rel-L2, τ = 0 → 8 (published / fa4sim --rng numpy:1 / fa4sim seed 1)";
  t2.columns = {"scores", "τ = 0", "τ = 8"};
  const double pub2[2][2] = {{0.0016, 0.0017}, {0.0005, 0.0013}};
  for (size_t i = 0; i < 2; ++i) {
    std::vector<std::string> row = {kErrorDistNames[i]};
    for (int j = 0; j < 2; ++j) {
      const double tau = j == 0 ? 0.0 : 8.0;
      const json* a = find_run(e_np, kErrorDists[i], tau, "bf16");
      const json* b = find_run(e_own, kErrorDists[i], tau, "bf16");
      row.push_back(fmt::format("{:g} / {} / {}", pub2[i][j], a ? cell((*a)["rel_l2"], "{:.5f}") : "?",
                                b ? cell((*b)["rel_l2"], "{:.5f}") : "?"));
    }
    t2.rows.push_back(row);
  }
  const json& os_np = e_np.results["oneshot"];
  const json& os_own = e_own.results["oneshot"];
  t2.rows.push_back({"one-shot: top P 1.0 → 2^u",
                     fmt::format("0.00065 / {} / {}", cell(os_np["rel_l2_top_p_1"], "{:.5f}"),
                                 cell(os_own["rel_l2_top_p_1"], "{:.5f}")),
                     fmt::format("0.00159 / {} / {}", cell(os_np["rel_l2_top_p_2u"], "{:.5f}"),
                                 cell(os_own["rel_l2_top_p_2u"], "{:.5f}"))});
  t2.notes.push_back("Command: `fa4sim rescale --dist normal:1.5,peaked --rng numpy:1` (and without "
                     "--rng). The one-shot row: one tile of all keys, dominant P = 1.0 exactly vs 2^u, "
                     "u ~ U[0,1) per row (NumPy mode: a fresh default_rng(1) draws V, the N(0,6²) "
                     "scores, then u).");
  return render_markdown(t2) + "\n";

}

// FP8, max_offset 8, tau 0 / 4.
std::string fp8_section(ReportContext& ctx) {
  auto fp8_cfg = [&](RngChoice::Kind rng) {
    RescaleConfig c;
    c.dists = {parse_score_dist("normal:1.5"), parse_score_dist("peaked")};
    c.taus = {0.0, 4.0};
    c.dtypes = {"e4m3", "e5m2"};
    c.max_offset = 8.0;
    c.allow_saturation = true;
    c.oneshot = false;
    c.rng = rng;
    c.threads = ctx.threads;
    return c;
  };
  Stopwatch sw3;
  Report f_np = run_rescale(fp8_cfg(RngChoice::Kind::numpy));
  ctx.write(f_np, "rescale_fp8_numpy1.json", sw3.seconds());
  Table t3;
  t3.title = "FP8 P (max_offset 8), rel-L2 (published / fa4sim --rng numpy:1), saturated P";
  t3.columns = {"scores", "E4M3 τ=0", "E4M3 τ=4", "E5M2 τ=0", "E5M2 τ=4", "E4M3 τ=4 saturated P"};
  const double pub3[2][4] = {{0.025, 0.188, 0.050, 0.053}, {0.008, 0.393, 0.016, 0.037}};
  for (size_t i = 0; i < 2; ++i) {
    std::vector<std::string> row = {kErrorDistNames[i]};
    for (int j = 0; j < 4; ++j) {
      const json* a = find_run(f_np, kErrorDists[i], j % 2 == 0 ? 0.0 : 4.0, j < 2 ? "e4m3" : "e5m2");
      row.push_back(fmt::format("{:g} / {}", pub3[i][j], a ? cell((*a)["rel_l2"], "{:.3f}") : "?"));
    }
    const json* s = find_run(f_np, kErrorDists[i], 4.0, "e4m3");
    row.push_back(s ? fmt::format("{} ({}%)", cell((*s)["saturated"], "{:.0f}"),
                                  cell((*s)["saturated_pct"], "{:.3f}"))
                    : "?");
    t3.rows.push_back(row);
  }
  t3.notes.push_back("Command: `fa4sim rescale --dist normal:1.5,peaked --dtype e4m3,e5m2 --tau 0,4 "
                     "--max-offset 8 --allow-saturation --rng numpy:1`. Without --allow-saturation "
                     "it refuses E4M3 with tau 4: 8 + 4 >= log2(448) = 8.807.");
  return render_markdown(t3) + "\n";
}

}  // namespace

void report_rescale(ReportContext& ctx) {
  std::string md = "## Conditional rescaling (`fa4sim rescale`)\n\n";
  md +=
      "Modelling choices (the article's, per its independent reproduction): one V ~ N(0,1) of shape "
      "(8192, 128) shared by all rows and by the float64 reference, not quantised; peaked = i.i.d. "
      "N(0, 6^2); rise:T = N(0, 1.5^2) + T*k/keys; row_sum from the float32 P; P cast "
      "round-to-nearest-even with subnormals and satfinite; key blocks walked forward (the article's "
      "order; the sm100 kernel walks them in reverse, `--order reverse`). The simulator's own choices: "
      "scores stored as float32 (the kernel's S), P @ V accumulated in key order with one fma per key, "
      "exp2 = correctly rounded float32 (`--exp mufu`). rows % = row rescales / (rows x (blocks - 1)), "
      "warps % = warps of 32 rows with any rescale / (warps x (blocks - 1)).\n\n";

  md += counts_section(ctx);
  md += bf16_error_section(ctx);
  md += fp8_section(ctx);
  ctx.markdown += md;
}

}  // namespace fa4sim::cli
