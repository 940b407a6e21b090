// Roofline model, exp pipe model and emulation schedule: hand-worked examples with the
// arithmetic in comments (include/fa4sim/analysis/roofline.h, Note [Counting convention]).
// Every expected value is exact (small integers and powers of two, or ratios of them), so the
// comparisons use EXPECT_DOUBLE_EQ (4 ulp) unless a comment says otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_schedule.h"
#include "fa4sim/analysis/roofline.h"

using namespace fa4sim;

namespace {

ArchSpec arch(const char* name) { return load_known_arch(name); }

// A minimal valid arch JSON; tests corrupt one field at a time.
json custom_arch_json() {
  auto f = [](json v) { return json{{"value", v}, {"source", "test"}, {"assumption", false}}; };
  return {{"schema", "fa4sim/arch-v1"},
          {"name", "toy"},
          {"fields",
           {{"sm_count", f(10)},
            {"sm_clock_mhz", f(1000)},
            {"mma_bf16_flop_per_clk_sm", f(1024)},
            {"mma_fp8_flop_per_clk_sm", f(nullptr)},
            {"mufu_ex2_per_clk_sm", f(8)},
            {"fp32_fma_lanes_per_clk_sm", f(64)},
            {"alu_lanes_per_clk_sm", f(32)},
            {"packed_f32x2", f(false)},
            {"smsp_per_sm", f(2)},
            {"issue_slots_per_clk_smsp", f(1)},
            {"smem_bytes_per_clk_sm", f(64)}}}};
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

// ---- schedule (apply_exp2_convert)

// The rule is constexpr: the GPU kernels can use it at compile time too.
static_assert(emulated_count(128, 10, 4, 1) == 24);
static_assert(!emulated(0, 128, 0, 4, 0));

TEST(Exp2Schedule, SeedFourCasesOf128WideRow) {
  // 128 columns = 4 fragments of 32; fragment 3 (the last) is always MUFU.
  // (10, 4, 1): fragments 1 and 2; pairs k = 0, 2, ..., 30 with k % 10 >= 6: k = 6, 8, 16, 18,
  //   26, 28 -> 6 pairs = 12 columns per fragment -> 24 / 128 = 18.75 %.
  EXPECT_EQ(emulated_count(128, 10, 4, 1), 24);
  // (16, 4, 1): k % 16 >= 12: k = 12, 14, 28, 30 -> 8 columns x 2 fragments = 16 -> 12.5 %.
  EXPECT_EQ(emulated_count(128, 16, 4, 1), 16);
  // (32, 4, 1): k % 32 >= 28: k = 28, 30 -> 4 columns x 2 fragments = 8 -> 6.25 %.
  EXPECT_EQ(emulated_count(128, 32, 4, 1), 8);
  // FP8 causal (8, 4, 1): k % 8 >= 4: k = 4, 6, 12, 14, 20, 22, 28, 30 -> 16 x 2 = 32 -> 25 %.
  EXPECT_EQ(emulated_count(128, 8, 4, 1), 32);
  EXPECT_DOUBLE_EQ(compute_schedule(10, 4, 1, 128).fraction, 0.1875);
  EXPECT_DOUBLE_EQ(compute_schedule(16, 4, 1, 128).fraction, 0.125);
  EXPECT_DOUBLE_EQ(compute_schedule(32, 4, 1, 128).fraction, 0.0625);
  EXPECT_DOUBLE_EQ(compute_schedule(8, 4, 1, 128).fraction, 0.25);
}

TEST(Exp2Schedule, ColumnByColumn) {
  // (10, 4, 1), fragment 1 = columns 32..63: k = 6 -> columns 38, 39; k = 8 -> 40, 41;
  // k = 4 (36, 37) and k = 10 (42, 43: 10 % 10 = 0 < 6) stay on the MUFU.
  for (int c : {38, 39, 40, 41, 48, 49, 50, 51, 58, 59, 60, 61})
    EXPECT_TRUE(emulated(c, 128, 10, 4, 1)) << c;
  for (int c : {36, 37, 42, 43, 6, 7, 8, 9, 102, 103, 104, 105})
    EXPECT_FALSE(emulated(c, 128, 10, 4, 1)) << c;
  // start_frg = 0 makes fragment 0 eligible: column 6 (k = 6) is emulated then.
  EXPECT_TRUE(emulated(6, 128, 10, 4, 0));
  // hd256 (14, 6, 0): k % 14 >= 8 -> k = 8, 10, 12, 22, 24, 26 -> 12 columns x 3 fragments = 36.
  EXPECT_EQ(emulated_count(128, 14, 6, 0), 36);
  // A 64-wide row has 2 fragments: only fragment 0 can emulate.
  EXPECT_EQ(emulated_count(64, 10, 4, 0), 12);
  EXPECT_EQ(emulated_count(64, 10, 4, 1), 0);
}

TEST(Exp2Schedule, IllFormedIsAllHardwareAndRejectedAtTheBoundary) {
  EXPECT_EQ(emulated_count(128, 0, 4, 1), 0);  // freq 0 = no emulation (sm103)
  EXPECT_FALSE(emulated(40, 128, 3, 4, 0));    // res >= freq: ill formed -> hardware
  EXPECT_FALSE(emulated(40, 100, 10, 4, 0));   // row not a multiple of 32
  EXPECT_FALSE(emulated(-1, 128, 10, 4, 0));
  EXPECT_FALSE(emulated(128, 128, 10, 4, 0));
  EXPECT_NE(error_of([] { compute_schedule(3, 4, 0, 128); }).find("res = 4"), std::string::npos);
  EXPECT_NE(error_of([] { compute_schedule(10, 4, 1, 100); }).find("row width 100"),
            std::string::npos);
  EXPECT_NE(error_of([] { compute_schedule(-1, 4, 1, 128); }).find("negative"), std::string::npos);
}

TEST(Exp2Schedule, TuningTableReproducesEverySeedFraction) {
  const TuningTable t = load_tuning();
  int seeds = 0;
  for (const auto& e : t.entries) {
    const ScheduleResult s =
        compute_schedule(e.freq, e.res, e.start_frg, t.row_width, tuning_key(e));
    if (e.is_sm103) {
      EXPECT_EQ(s.emulated.size(), 0u) << s.key;  // "fast native exp2"
    }
    if (e.seed_fraction) {
      ++seeds;
      EXPECT_DOUBLE_EQ(s.fraction, *e.seed_fraction) << s.key;
    }
  }
  EXPECT_EQ(seeds, 4);
  EXPECT_EQ(t.entries.size(), 14u);
}

// ---- tile model

TEST(RooflineTile, B200ForwardTable1) {
  const TileCost c = tile_cost(arch("b200"), Direction::fwd, OperandType::bf16, 1, 128, 128, 128);
  // MMA: 4 * 128^3 / 8192 = 8388608 / 8192 = 1024.
  EXPECT_DOUBLE_EQ(c.cycles_mma, 1024);
  // exp: 128 * 128 / 16 = 1024.
  EXPECT_DOUBLE_EQ(c.cycles_exp, 1024);
  // smem: Q + K + V = 3 * 128 * 128 * 2 B = 98304 B / 128 B/clk = 768.
  EXPECT_DOUBLE_EQ(c.cycles_smem, 768);
  EXPECT_DOUBLE_EQ(c.exp_over_mma, 1.0);
  EXPECT_DOUBLE_EQ(c.smem_over_mma, 0.75);
  EXPECT_EQ(c.bottleneck, "mma=exp");
  EXPECT_DOUBLE_EQ(c.emu_fraction_to_tie, 0.0);
}

TEST(RooflineTile, ExpOverMmaIs128OverDOnB200And64OverDOnHopperAndB300) {
  for (int d : {32, 64, 96, 128, 192, 256}) {
    // B200: (M N / 16) / (4 M N d / 8192) = 128 / d.
    EXPECT_DOUBLE_EQ(
        tile_cost(arch("b200"), Direction::fwd, OperandType::bf16, 1, 128, 128, d).exp_over_mma,
        128.0 / d);
    // H100: (M N / 16) / (4 M N d / 4096) = 64 / d; B300: (M N / 32) / (4 M N d / 8192) = 64 / d.
    EXPECT_DOUBLE_EQ(
        tile_cost(arch("h100_sxm"), Direction::fwd, OperandType::bf16, 1, 128, 128, d).exp_over_mma,
        64.0 / d);
    EXPECT_DOUBLE_EQ(
        tile_cost(arch("b300"), Direction::fwd, OperandType::bf16, 1, 128, 128, d).exp_over_mma,
        64.0 / d);
  }
  // Tile size cancels: 64 x 256 gives the same ratio as 128 x 128.
  EXPECT_DOUBLE_EQ(
      tile_cost(arch("b200"), Direction::fwd, OperandType::bf16, 1, 64, 256, 64).exp_over_mma, 2.0);
  // d = 64 on B200: T_mma = 4 * 128 * 128 * 64 / 8192 = 512, T_exp = 1024, so half the exps must
  // leave the MUFU: (1 - f) * 1024 = 512 -> f = 0.5.
  const TileCost c = tile_cost(arch("b200"), Direction::fwd, OperandType::bf16, 1, 128, 128, 64);
  EXPECT_DOUBLE_EQ(c.cycles_mma, 512);
  EXPECT_DOUBLE_EQ(c.emu_fraction_to_tie, 0.5);
  EXPECT_EQ(c.bottleneck, "exp");
}

TEST(RooflineTile, B200BackwardOneAndTwoCta) {
  const ArchSpec b = arch("b200");
  const TileCost one = tile_cost(b, Direction::bwd, OperandType::bf16, 1, 128, 128, 128);
  const TileCost two = tile_cost(b, Direction::bwd, OperandType::bf16, 2, 128, 128, 128);
  // MMA: 5 GEMMs x 2 * 128^3 = 20971520 FLOP / 8192 = 2560.
  EXPECT_DOUBLE_EQ(one.cycles_mma, 2560);
  EXPECT_DOUBLE_EQ(two.cycles_mma, 2560);
  // smem, 1-CTA, with T = 128 * 128 * 2 B = 32768 B (one bf16 tile):
  //   A operands K, V, dS: 3T; B operands Q, dO, dO, Q, K: 5T; dS write: T;
  //   dQ fp32 write + read: 2 * 128 * 128 * 4 = 4T.  13T = 425984 B / 128 = 3328.
  EXPECT_DOUBLE_EQ(one.cycles_smem, 3328);
  // 2-CTA halves the B operands: 13T - 2.5T = 10.5T = 344064 B / 128 = 2688.
  EXPECT_DOUBLE_EQ(two.cycles_smem, 2688);
  EXPECT_DOUBLE_EQ(one.smem_over_mma, 1.30);  // +30 %: 3328 / 2560 = 1.3
  EXPECT_DOUBLE_EQ(two.smem_over_mma, 1.05);  // +5 %:  2688 / 2560 = 1.05
  EXPECT_EQ(one.bottleneck, "smem");
  // exp: the backward recomputes P: 16384 / 16 = 1024.
  EXPECT_DOUBLE_EQ(one.cycles_exp, 1024);
}

TEST(RooflineTile, Fp8ForwardAndRejections) {
  const TileCost c = tile_cost(arch("b200"), Direction::fwd, OperandType::fp8, 1, 128, 128, 128);
  // MMA: 8388608 / 16384 = 512; smem: 3 * 128 * 128 * 1 B / 128 = 384; exp unchanged: 1024.
  EXPECT_DOUBLE_EQ(c.cycles_mma, 512);
  EXPECT_DOUBLE_EQ(c.cycles_smem, 384);
  EXPECT_DOUBLE_EQ(c.exp_over_mma, 2.0);
  EXPECT_NE(error_of([] {
              tile_cost(arch("a100"), Direction::fwd, OperandType::fp8, 1, 128, 128, 128);
            }).find("no fp8 MMA"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tile_cost(arch("b200"), Direction::bwd, OperandType::fp8, 1, 128, 128, 128);
            }).find("backward"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              tile_cost(arch("b200"), Direction::fwd, OperandType::bf16, 1, 0, 128, 128);
            }).find("empty"),
            std::string::npos);
}

TEST(RooflineTile, CustomArchFromJson) {
  const ArchSpec a = parse_arch(custom_arch_json(), "toy.json");
  EXPECT_FALSE(a.mma_fp8_flop_per_clk_sm.has_value());
  // 64x64 tile, d = 32: MMA 4 * 64 * 64 * 32 / 1024 = 512; exp 4096 / 8 = 512;
  // smem (64 * 32 + 2 * 64 * 32) * 2 B = 12288 B / 64 = 192.
  const TileCost c = tile_cost(a, Direction::fwd, OperandType::bf16, 1, 64, 64, 32);
  EXPECT_DOUBLE_EQ(c.cycles_mma, 512);
  EXPECT_DOUBLE_EQ(c.cycles_exp, 512);
  EXPECT_DOUBLE_EQ(c.cycles_smem, 192);
}

TEST(RooflineArch, ValidationNamesTheField) {
  auto with = [](const std::string& key, json value) {
    json j = custom_arch_json();
    if (value.is_discarded())
      j["fields"].erase(key);
    else
      j["fields"][key]["value"] = value;
    return j;
  };
  auto msg = [&](const json& j) { return error_of([&] { parse_arch(j, "toy.json"); }); };
  const std::string missing = msg(with("mufu_ex2_per_clk_sm", json(json::value_t::discarded)));
  EXPECT_NE(missing.find("'fields.mufu_ex2_per_clk_sm' is missing"), std::string::npos) << missing;
  const std::string type = msg(with("sm_count", "many"));
  EXPECT_NE(type.find("'fields.sm_count.value' must be a number, got string"), std::string::npos)
      << type;
  const std::string neg = msg(with("mma_bf16_flop_per_clk_sm", -8192));
  EXPECT_NE(neg.find("'fields.mma_bf16_flop_per_clk_sm.value' must be > 0, got -8192"),
            std::string::npos)
      << neg;
  const std::string zero = msg(with("smem_bytes_per_clk_sm", 0));
  EXPECT_NE(zero.find("smem_bytes_per_clk_sm.value' must be > 0"), std::string::npos) << zero;
  const std::string boolean = msg(with("packed_f32x2", 1));
  EXPECT_NE(boolean.find("'fields.packed_f32x2.value' must be true or false"), std::string::npos)
      << boolean;
  const std::string frac = msg(with("sm_count", 1.5));
  EXPECT_NE(frac.find("'fields.sm_count.value' must be an integer"), std::string::npos) << frac;
  json unknown = custom_arch_json();
  unknown["fields"]["mufu_rate"] = {{"value", 1}, {"source", "x"}, {"assumption", false}};
  EXPECT_NE(msg(unknown).find("unknown field 'fields.mufu_rate'"), std::string::npos);
  json no_source = custom_arch_json();
  no_source["fields"]["sm_count"].erase("source");
  EXPECT_NE(msg(no_source).find("'fields.sm_count.source' is missing"), std::string::npos);
  json schema = custom_arch_json();
  schema["schema"] = "v0";
  EXPECT_NE(msg(schema).find("'schema'"), std::string::npos);
  EXPECT_NE(msg(json::array()).find("must be a JSON object"), std::string::npos);
}

TEST(RooflineArch, ShippedFilesLoadAndMarkAssumptions) {
  const auto names = known_arch_names();
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(names[0], "a100");
  EXPECT_EQ(names[4], "b300");
  for (const auto& n : names) {
    const ArchSpec a = load_known_arch(n);
    EXPECT_EQ(a.name, n);
    // Every field has a non-empty source (parse_arch enforces it; this checks the shipped data).
    for (const auto& [k, v] : a.fields.items())
      EXPECT_FALSE(v.at("source").get<std::string>().empty()) << n << k;
  }
  // The B300 SM count and Blackwell clocks are secondary (docs/facts.md §4): marked.
  const ArchSpec b300 = load_known_arch("b300");
  EXPECT_NE(std::find(b300.assumptions.begin(), b300.assumptions.end(), "sm_count"),
            b300.assumptions.end());
  EXPECT_DOUBLE_EQ(b300.mufu_ex2_per_clk_sm, 32);
  EXPECT_TRUE(load_known_arch("h200").assumptions.empty());  // read on a real H200 or published
}

// ---- pipe model

TEST(RooflinePipe, InstructionCountsPerEmulatedExp) {
  const PipeModelSpec pm = load_pipe_model();
  const ArchSpec hopper = arch("h100_sxm"), blackwell = arch("b200");
  // Degree 3: FMA pipe = add.rm + 2 sub + 3 fma = 6; ALU = max + LEA = 2.
  // Issue: scalar 6 + 2 = 8; packed 6 / 2 + 2 = 5.
  const PipeCounts h = pipe_counts(pm.emulated_exp2, hopper, 3),
                   b = pipe_counts(pm.emulated_exp2, blackwell, 3);
  EXPECT_DOUBLE_EQ(h.fma, 6);
  EXPECT_DOUBLE_EQ(h.alu, 2);
  EXPECT_DOUBLE_EQ(h.mufu, 0);
  EXPECT_DOUBLE_EQ(h.issue, 8);
  EXPECT_DOUBLE_EQ(b.fma, 6);
  EXPECT_DOUBLE_EQ(b.issue, 5);
  // Each degree adds one FMA.
  for (int deg = 1; deg <= 5; ++deg)
    EXPECT_DOUBLE_EQ(pipe_counts(pm.emulated_exp2, hopper, deg).fma, 3 + deg);
  // Degree 0: p = 1 ignores f, so the two subtracts are dead: FMA pipe = add.rm only; issue =
  // add.rm + max + LEA = 3 (H200 SASS: FADD.FTZ.RM, FMNMX.FTZ, LEA per exp).
  EXPECT_DOUBLE_EQ(pipe_counts(pm.emulated_exp2, hopper, 0).fma, 1);
  EXPECT_DOUBLE_EQ(pipe_counts(pm.emulated_exp2, hopper, 0).issue, 3);
  // Then the ALU binds at f = 1: 2 ALU ops / 64 lanes -> 32 exps/clk/SM (issue 3 / 128 -> 42.7).
  EXPECT_DOUBLE_EQ(pipe_point(pm, hopper, 0, 1.0, false).exps_per_clk_sm, 32);
  EXPECT_EQ(pipe_point(pm, hopper, 0, 1.0, false).bound, "alu");
  const PipeCounts hw = pipe_counts(pm.hardware_exp2, hopper, 3);
  EXPECT_DOUBLE_EQ(hw.mufu, 1);
  EXPECT_DOUBLE_EQ(hw.issue, 1);
}

TEST(RooflinePipe, HopperExpOnlyCurveAndBestF) {
  const PipeModelSpec pm = load_pipe_model();
  const ArchSpec h = arch("h100_sxm");
  // In units of 1/128 clock per element: fma 6f (128 lanes), alu 2f/64 = 4f, mufu (1-f)/16 =
  // 8 - 8f, issue (1 - f + 8f) / 128 -> 1 + 7f.
  // f = 0: mufu 8 -> 128 / 8 = 16 exps/clk/SM.
  EXPECT_DOUBLE_EQ(pipe_point(pm, h, 3, 0.0, false).exps_per_clk_sm, 16);
  EXPECT_EQ(pipe_point(pm, h, 3, 0.0, false).bound, "mufu");
  // f = 1: issue 8 -> 16; fma 6 < 8.
  EXPECT_DOUBLE_EQ(pipe_point(pm, h, 3, 1.0, false).exps_per_clk_sm, 16);
  EXPECT_EQ(pipe_point(pm, h, 3, 1.0, false).bound, "issue");
  // Best: 8 - 8f = 1 + 7f -> f = 7/15, t = 64/15 -> 128 * 15 / 64 = 30.
  const PipePoint best = best_pipe_point(pm, h, 3, false);
  EXPECT_NEAR(best.f, 7.0 / 15, 1e-12);  // candidate from a division: a few ulp
  EXPECT_NEAR(best.exps_per_clk_sm, 30.0, 1e-9);
}

TEST(RooflinePipe, B200PackedExpOnlyAndSoftmax) {
  const PipeModelSpec pm = load_pipe_model();
  const ArchSpec b = arch("b200");
  // Exp only, 1/128 clock per element: fma 6f, alu 4f, mufu 8 - 8f, issue 1 - f + 5f = 1 + 4f.
  // Best: 8 - 8f = 6f -> f = 4/7, t = 24/7 -> 128 * 7 / 24 = 37.33 (FMA-bound).
  const PipePoint e = best_pipe_point(pm, b, 3, false);
  EXPECT_NEAR(e.f, 4.0 / 7, 1e-12);
  EXPECT_NEAR(e.exps_per_clk_sm, 128.0 * 7 / 24, 1e-9);
  EXPECT_EQ(e.bound, "fma=mufu");
  // With the other softmax work (+2 fma lane ops, +1.5 alu, +2.5 issue with f32x2):
  // fma 2 + 6f, alu (1.5 + 2f) * 2 = 3 + 4f, mufu 8 - 8f, issue 3.5 + 4f.
  // Best: 8 - 8f = 3.5 + 4f -> f = 0.375, t = 5 -> 25.6.
  const PipePoint s = best_pipe_point(pm, b, 3, true);
  EXPECT_NEAR(s.f, 0.375, 1e-12);
  EXPECT_NEAR(s.exps_per_clk_sm, 25.6, 1e-9);
  // At the d = 64 tie (f = 0.5): issue 3.5 + 2 = 5.5 -> 128 / 5.5 = 23.27 softmax elements per
  // clock, so the 128 x 128 tile's softmax takes 16384 * 5.5 / 128 = 704 cycles > T_mma = 512.
  EXPECT_NEAR(pipe_point(pm, b, 3, 0.5, true).exps_per_clk_sm, 128 / 5.5, 1e-9);
}

// ---- measured file

TEST(RooflineMeasured, ParsesAndRejectsWithFieldNames) {
  json good = {{"schema", "fa4sim/bench-exp-v1"},
               {"device", "hand-made"},
               {"arch", "h200"},
               {"points", {{{"degree", 3}, {"f", 0.0}, {"exps_per_clk_sm", 16.0}}}}};
  const MeasuredFile m = parse_measured(good, "m.json");
  ASSERT_EQ(m.points.size(), 1u);
  EXPECT_EQ(m.points[0].degree, 3);
  auto msg = [](json j) { return error_of([&] { parse_measured(j, "m.json"); }); };
  json bad = good;
  bad["points"][0]["f"] = 1.5;
  EXPECT_NE(msg(bad).find("'points[0].f' must be in [0, 1]"), std::string::npos);
  bad = good;
  bad["points"][0]["exps_per_clk_sm"] = -1;
  EXPECT_NE(msg(bad).find("'points[0].exps_per_clk_sm' must be > 0"), std::string::npos);
  bad = good;
  bad["points"][0]["degree"] = 9;
  EXPECT_NE(msg(bad).find("'points[0].degree'"), std::string::npos);
  bad = good;
  bad.erase("arch");
  EXPECT_NE(msg(bad).find("'arch' is missing"), std::string::npos);
  bad = good;
  bad["points"] = json::array();
  EXPECT_NE(msg(bad).find("'points' must be a non-empty array"), std::string::npos);
}

// ---- report-level checks

TEST(RooflineReport, ExcessInvestigationFindsThe30And5AndOnlyD80For60) {
  std::vector<ArchSpec> archs;
  for (const auto& n : known_arch_names()) archs.push_back(load_known_arch(n));
  Report r;
  add_excess_investigation(r, archs);
  const json& inv = r.results["excess_investigation"];
  int n60 = 0;
  for (const auto& row : inv["readings"]) {
    const double x = row["largest_excess"].get<double>();
    if (std::fabs(x - 0.60) < 5e-3) {
      ++n60;
      EXPECT_EQ(row["d"].get<int>(), 80);  // 128 / 80 = 1.6: the only reading at +60 %
    }
    if (row["direction"] == "bwd" && row["d"] == 128 && row["arch"] == "b200") {
      EXPECT_NEAR(x, row["cta_group"] == 1 ? 0.30 : 0.05, 1e-12);
    }
  }
  EXPECT_EQ(n60, 1);
  EXPECT_NE(inv["finding"].get<std::string>().find("d = 80"), std::string::npos);
}

TEST(RooflineReport, RunRooflineRowsCarryTheDocumentedFields) {
  RooflineOptions o;
  o.archs = {arch("b200")};
  o.ds = {64};
  o.emu_fraction = 0.25;
  Report r = run_roofline(o);
  ASSERT_EQ(r.results["rows"].size(), 1u);
  const json& row = r.results["rows"][0];
  for (const char* k :
       {"arch", "d", "direction", "dtype", "tile_m", "tile_n", "cycles_mma", "cycles_exp",
        "cycles_smem", "exp_over_mma", "smem_over_mma", "bottleneck", "emu_fraction_to_tie"})
    EXPECT_TRUE(row.contains(k)) << k;
  EXPECT_DOUBLE_EQ(row["exp_over_mma"].get<double>(), 2.0);
  // f = 0.25 on B200, exp only: mufu 8 - 2 = 6 -> 128 / 6 per clock -> 16384 * 6 / 128 = 768.
  EXPECT_NEAR(row["cycles_exp_at_f"].get<double>(), 768, 1e-9);
  // Curve: 17 points (step 1/16) for one arch and one degree.
  EXPECT_EQ(r.results["pipe_model"].size(), 17u);
  EXPECT_TRUE(r.results["schedule"].empty());
}
