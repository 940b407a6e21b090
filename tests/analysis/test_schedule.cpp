// schedule.h: the schedule model. The kernel descriptions pick upstream's tiles, the simulation
// obeys its resources, predictions move the way the kernel does, and bad input is refused with
// the field or option named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/analysis/schedule.h"
#include "fa4sim/util/error.h"
#include "../../src/analysis/schedule_sim.h"

using namespace fa4sim;

namespace {

const ArchSpec& h200() {
  static const ArchSpec a = load_known_arch("h200");
  return a;
}
const ScheduleSpec& sm90() {
  static const ScheduleSpec s = load_schedule_spec("sm90");
  return s;
}

json sm90_json() {
  return read_json_file(std::string(FA4SIM_SOURCE_DIR) + "/data/schedule/sm90.json",
                        "schedule file");
}

// parse_schedule_spec refuses `j` with an error that names `field`.
void expect_refused_naming(const json& j, const std::string& field) {
  try {
    parse_schedule_spec(j, "edited.json");
    ADD_FAILURE() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

ScheduleInput shape(int d, bool causal = false, int seq = 4096, int batch = 4, int heads = 32,
                    int kv = 32) {
  ScheduleInput in;
  in.shape = {batch, heads, kv, seq, seq, d, causal};
  return in;
}

// The whole grid's clocks of `in` on the H200 under `spec`.
double clocks_of(const ScheduleSpec& spec, const ScheduleInput& in) {
  return predict_schedule(h200(), spec, in).total_cycles;
}

}  // namespace

// flash_attn/cute/interface.py _tile_size_fwd_sm90 (4.0.0b36), as data/schedule/sm90.json writes it.
TEST(Schedule, Sm90TilesAreUpstreams) {
  struct Case {
    int d;
    bool causal;
    int m, n, warps;
  };
  for (const Case c :
       {Case{64, false, 192, 128, 3}, Case{64, true, 192, 128, 3}, Case{96, false, 192, 144, 3},
        Case{96, true, 192, 128, 3}, Case{128, false, 128, 128, 2}, Case{192, false, 128, 112, 2},
        Case{256, true, 128, 80, 2}}) {
    const SchedulePrediction p = predict_schedule(h200(), sm90(), shape(c.d, c.causal));
    EXPECT_EQ(p.tile_m, c.m) << c.d;
    EXPECT_EQ(p.tile_n, c.n) << c.d;
    EXPECT_EQ(p.warps, c.warps) << c.d;
  }
}

// One warp alone: a program of n MUFU instructions holds the MUFU n * 32 / lanes clocks.
TEST(Schedule, SimulationChargesEachPipeItsOccupancy) {
  sched::SimConfig c;
  c.warps = 1;
  c.turn_barrier = false;
  c.rates.occupancy = {0, 1, 2, 8, 2};
  c.rates.latency = {1, 4, 4, 20, 24};
  sched::Program mufu(64, sched::Instr{sched::kMufu});
  const auto r = sched::simulate(c, 1, [&](int) {
    sched::IterationWork w;
    w.softmax = mufu;
    return w;
  });
  EXPECT_DOUBLE_EQ(r.pipe_busy[sched::kMufu], 64 * 8.0);
  EXPECT_GE(r.end, 63 * 8.0 + 20);  // the last one issues after 63 others, then its latency
  EXPECT_LE(r.end, 64 * 8.0 + 40);
}

// Two warps sharing the tensor unit: with no softmax work the iteration is the MMAs back to back.
TEST(Schedule, SimulationTensorFifoBindsWithoutSoftmax) {
  sched::SimConfig c;
  c.warps = 2;
  c.rates.occupancy = {0, 1, 2, 8, 2};
  c.rates.latency = {1, 4, 4, 20, 24};
  const auto r = sched::simulate(c, 20, [&](int j) {
    sched::IterationWork w;
    w.gemm0 = 100;
    w.gemm1 = j == 0 ? 0 : 100;
    return w;
  });
  const double period = (r.iter_start[19] - r.iter_start[9]) / 10;
  EXPECT_NEAR(period, 2 * 200.0, 1.0);
  EXPECT_NEAR(r.tensor_busy, 2 * (20 * 200.0 - 100 + 100), 1e-9);
}

TEST(Schedule, PredictionsMoveAsTheKernelDoes) {
  const auto base = predict_schedule(h200(), sm90(), shape(64));
  // twice the batch: twice the CTAs, about twice the time (the last wave is partial)
  const auto twice = predict_schedule(h200(), sm90(), shape(64, false, 4096, 8));
  EXPECT_EQ(twice.ctas, 2 * base.ctas);
  EXPECT_NEAR(twice.total_cycles / base.total_cycles, 2.0, 0.1);
  // causal: half the FLOPs, less time
  const auto causal = predict_schedule(h200(), sm90(), shape(64, true));
  EXPECT_DOUBLE_EQ(causal.flops, base.flops / 2);
  EXPECT_LT(causal.total_cycles, base.total_cycles);
  // GQA with pack_gqa: the same CTAs and work as MHA
  const auto gqa = predict_schedule(h200(), sm90(), shape(128, false, 4096, 4, 32, 8));
  const auto mha = predict_schedule(h200(), sm90(), shape(128));
  EXPECT_EQ(gqa.ctas, mha.ctas);
  EXPECT_NEAR(gqa.total_cycles, mha.total_cycles, 1e-6 * mha.total_cycles);
  // emulating exps at d = 64 on the H200 costs time (measured: data/schedule/eval_h200.json)
  ScheduleInput emu = shape(64);
  emu.tricks.emu_fraction = 0.5;
  EXPECT_GT(clocks_of(sm90(), emu), base.total_cycles * 1.05);
  // a prediction is a pure function of its input
  EXPECT_EQ(clocks_of(sm90(), shape(64)), base.total_cycles);
}

// The Blackwell kernel: upstream's stock setting is tau 8 with its emulation table.
TEST(Schedule, Sm100StockIsUpstreamsTricks) {
  const ScheduleSpec s = load_schedule_spec("sm100");
  EXPECT_EQ(schedule_spec_for_arch(load_known_arch("b200")), "sm100");
  EXPECT_EQ(schedule_spec_for_arch(h200()), "sm90");
  const TileRule& r = tile_rule(s, 128, false);
  EXPECT_EQ(r.stock_tau, 8);
  EXPECT_DOUBLE_EQ(r.stock_emu_fraction, 0.1875);
  const auto p = predict_schedule(load_known_arch("b200"), s, shape(128));
  EXPECT_EQ(p.tile_m, 256);
  EXPECT_GT(p.tflops, 0);
  EXPECT_THROW(schedule_spec_for_arch(load_known_arch("a100")), Error);
}

TEST(Schedule, BadInputIsRefusedWithTheReason) {
  auto expect_error = [](ScheduleInput in, const std::string& needle) {
    try {
      predict_schedule(h200(), sm90(), in);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(shape(100), "multiple of 8");
  expect_error(shape(264), "multiple of 8");
  expect_error(shape(64, false, 0), "seq");
  expect_error(shape(64, false, 4096, 4, 32, 5), "not a multiple of kv heads");
  ScheduleInput f = shape(64);
  f.tricks.emu_fraction = 1.5;
  expect_error(f, "outside [0, 1]");
  f.tricks.emu_fraction = -0.1;
  expect_error(f, "outside [0, 1]");
  ScheduleInput t = shape(64);
  t.tile_m = 100;
  t.tile_n = 128;
  expect_error(t, "tile 100x128");
}

TEST(Schedule, SpecMissingAFieldNamesIt) {
  json j = sm90_json();
  j["calibrated"].erase("tau_cycles");
  expect_refused_naming(j, "calibrated.tau_cycles");
  j = sm90_json();
  j["tiles"][2].erase("tile_n");
  EXPECT_THROW(parse_schedule_spec(j, "edited.json"), Error);
}

// clock_from_stock: a variant runs at the clock of the stock kernel on its shape (the tricks move
// work between pipes, not the shape's power); without it the clock follows the variant's own load.
TEST(Schedule, ClockFollowsTheShapeNotTheTricks) {
  ASSERT_TRUE(sm90().clock_from_stock);
  ScheduleInput emu = shape(64);
  emu.tricks.emu_fraction = 0.5;
  const auto stock = predict_schedule(h200(), sm90(), shape(64));
  const auto variant = predict_schedule(h200(), sm90(), emu);
  EXPECT_DOUBLE_EQ(variant.clock_mhz, stock.clock_mhz);
  EXPECT_LT(variant.tensor_share_grid, stock.tensor_share_grid);
  ScheduleSpec own = sm90();
  own.clock_from_stock = false;
  EXPECT_GT(predict_schedule(h200(), own, emu).clock_mhz, stock.clock_mhz);
  EXPECT_DOUBLE_EQ(predict_schedule(h200(), own, shape(64)).clock_mhz, stock.clock_mhz);
  // a larger head dim loads the tensor pipe more: a lower clock
  EXPECT_LT(predict_schedule(h200(), sm90(), shape(128)).clock_mhz, stock.clock_mhz);
}

// A short run keeps the stock kernel's clock (above);
// a long one moves towards the variant's own tensor share by w = clamp(a ln(cycles_stock / c0), 0,
// 1), all the way at w = 1; a tile override keeps the stock clock; without the fields, w = 0
// (Note [Clock follows the tricks in long runs]).
TEST(Schedule, ClockFollowsTheTricksInLongRuns) {
  ASSERT_GT(sm90().clock_tricks_slope, 0);
  ScheduleInput emu = shape(64, false, 16384, 2, 16, 16);
  emu.tricks.emu_fraction = 0.5;
  const auto stock = predict_schedule(h200(), sm90(), shape(64, false, 16384, 2, 16, 16));
  const auto variant = predict_schedule(h200(), sm90(), emu);
  ScheduleSpec own = sm90();
  own.clock_from_stock = false;
  const double own_clock = predict_schedule(h200(), own, emu).clock_mhz;
  const double w = std::clamp(
      sm90().clock_tricks_slope * std::log(stock.total_cycles / sm90().clock_tricks_c0), 0.0, 1.0);
  ASSERT_GT(w, 0);
  ASSERT_LT(w, 1);
  EXPECT_GT(variant.clock_mhz, stock.clock_mhz);
  EXPECT_LT(variant.clock_mhz, own_clock);
  ScheduleSpec full = sm90();
  full.clock_tricks_c0 = 1;  // w = 1: the variant's own share, the stock kernel's length
  full.clock_tricks_slope = 100;
  const auto v1 = predict_schedule(h200(), full, emu);
  ScheduleSpec none = sm90();
  none.clock_tricks_slope = 0;
  EXPECT_DOUBLE_EQ(predict_schedule(h200(), none, emu).clock_mhz, stock.clock_mhz);
  EXPECT_GT(v1.clock_mhz, variant.clock_mhz);
  EXPECT_NEAR(v1.clock_mhz,
              std::min(h200().sm_clock_mhz,
                       sm90().clock_mhz_base /
                           (1 + sm90().clock_tensor_slowdown * v1.tensor_share_grid +
                            sm90().clock_duration_slope * std::log(stock.total_cycles / 1e6))),
              1e-6);
  ScheduleInput tiled = emu;  // a tile override: the stock clock
  tiled.tile_m = 128;
  tiled.tile_n = 128;
  EXPECT_DOUBLE_EQ(predict_schedule(h200(), full, tiled).clock_mhz, stock.clock_mhz);
  json j = sm90_json();
  j["calibrated"].erase("clock_tricks_slope");
  EXPECT_EQ(parse_schedule_spec(j, "old.json").clock_tricks_slope, 0);
  json bad = sm90_json();
  bad["calibrated"]["clock_tricks_c0"] = 0;
  expect_refused_naming(bad, "calibrated.clock_tricks_c0");
  bad = sm90_json();
  bad["calibrated"]["clock_tricks_slope"] = -1;
  expect_refused_naming(bad, "calibrated.clock_tricks_slope");
}

// A factor's cycles draw no tensor power (Note [Kernel factors in the clock]), so with factors a
// tricks variant's clock sees each kernel's share divided by its factor and the stock's length
// multiplied by its own; the stock's clock and a factor of 1 change nothing.
TEST(Schedule, KernelFactorsEnterTheClock) {
  ScheduleInput emu = shape(128, false, 16384, 2, 16, 16);
  emu.tricks.emu_fraction = 0.5;
  const ScheduleInput stock_in = shape(128, false, 16384, 2, 16, 16);
  const auto factors = [&](double f_variant, double f_stock) {
    KernelFactors f;
    f.archs = {h200().name};
    f.kernels.push_back(KernelFactor{128, false, 0, 0.5, 3, f_variant, 4});
    f.kernels.push_back(KernelFactor{128, false, 0, 0, 3, f_stock, 4});
    return f;
  };
  ASSERT_EQ(tile_rule(sm90(), 128, false).stock_tau, 0);
  ASSERT_EQ(tile_rule(sm90(), 128, false).stock_emu_fraction, 0);
  const auto alone = predict_schedule(h200(), sm90(), emu);
  const auto stock = predict_schedule(h200(), sm90(), stock_in);
  // factors of 1: the model alone's clock, bit for bit
  const KernelFactors ones = factors(1, 1);
  EXPECT_EQ(predict_schedule(h200(), sm90(), emu, &ones).clock_mhz, alone.clock_mhz);
  // the stock kernel keeps its clock whatever its factor; its time is scaled by it
  const KernelFactors slow_stock = factors(1, 1.15);
  const auto s2 = predict_schedule(h200(), sm90(), stock_in, &slow_stock);
  EXPECT_EQ(s2.clock_mhz, stock.clock_mhz);
  EXPECT_NEAR(s2.ms, stock.ms * 1.15, 1e-9 * stock.ms);
  // a variant slower than modelled draws less tensor power per clock: a higher clock; a stock
  // kernel slower than modelled leaves the variant less to gain: a lower one
  const KernelFactors slow_variant = factors(1.15, 1);
  const auto v = predict_schedule(h200(), sm90(), emu, &slow_variant);
  EXPECT_GT(v.clock_mhz, alone.clock_mhz);
  EXPECT_LT(predict_schedule(h200(), sm90(), emu, &slow_stock).clock_mhz, alone.clock_mhz);
  // a file with the stock kernel's factor and not the variant's: the variant is the model alone,
  // its clock included, bit for bit
  KernelFactors stock_only = slow_stock;
  stock_only.kernels.erase(stock_only.kernels.begin());
  const auto v_alone = predict_schedule(h200(), sm90(), emu, &stock_only);
  EXPECT_EQ(v_alone.clock_mhz, alone.clock_mhz);
  EXPECT_EQ(v_alone.ms, alone.ms);
  EXPECT_EQ(v_alone.kernel_factor, 1);
  // the closed form at w = 1, the stock's length corrected by its factor
  ScheduleSpec full = sm90();
  full.clock_tricks_c0 = 1;
  full.clock_tricks_slope = 100;
  const KernelFactors both = factors(1.15, 1.05);
  const auto vf = predict_schedule(h200(), full, emu, &both);
  const auto line = [&](double u, double cycles) {
    return sm90().clock_mhz_base / (1 + sm90().clock_tensor_slowdown * u +
                                    sm90().clock_duration_slope * std::log(cycles / 1e6));
  };
  const double us = stock.tensor_share_grid / 1.05, cs = stock.total_cycles * 1.05;
  EXPECT_NEAR(
      vf.clock_mhz,
      std::min(h200().sm_clock_mhz, line(stock.tensor_share_grid, stock.total_cycles) *
                                        line(vf.tensor_share_grid / 1.15, cs) / line(us, cs)),
      1e-6);
  EXPECT_DOUBLE_EQ(vf.kernel_factor, 1.15);
  // no weight (short runs or no term): the stock clock, factors or not
  ScheduleSpec none = sm90();
  none.clock_tricks_slope = 0;
  EXPECT_EQ(predict_schedule(h200(), none, emu, &both).clock_mhz,
            predict_schedule(h200(), none, emu).clock_mhz);
}

// The optional calibrated terms: absent, they change nothing; present, each moves what it prices.
TEST(Schedule, OptionalTermsPriceWhatTheyName) {
  json j =
      read_json_file(std::string(FA4SIM_SOURCE_DIR) + "/data/schedule/sm90.json", "schedule file");
  const ScheduleSpec base = parse_schedule_spec(j, "sm90.json");
  ScheduleInput causal = shape(64, true);
  json more_mask = j;
  more_mask["calibrated"]["mask_instructions"] = base.mask_instructions + 4;
  EXPECT_GT(clocks_of(parse_schedule_spec(more_mask, "m.json"), causal), clocks_of(base, causal));
  // the non-causal kernel has no masked scores: unchanged
  EXPECT_DOUBLE_EQ(clocks_of(parse_schedule_spec(more_mask, "m.json"), shape(64)),
                   clocks_of(base, shape(64)));
  ScheduleInput tau = shape(64);
  tau.tricks.tau = 8;
  json more_tau = j;
  more_tau["calibrated"]["tau_cycles_fixed"] = base.tau_cycles_fixed + 200;
  EXPECT_GT(clocks_of(parse_schedule_spec(more_tau, "t.json"), tau), clocks_of(base, tau));
  // FMA instructions beside an MMA: at d 224 the O rescale runs beside the MMAs
  json more_stall = j;
  more_stall["calibrated"]["fma_tensor_stall"] = base.fma_tensor_stall + 2;
  EXPECT_GT(clocks_of(parse_schedule_spec(more_stall, "s.json"), shape(224)),
            clocks_of(base, shape(224)));
  // P through shared memory (d 96: not RS) costs its exposed clocks; d 64 (RS) does not pay them
  json more_smem = j;
  more_smem["calibrated"]["smem_p_cycles"] = base.smem_p_cycles + 300;
  EXPECT_GT(clocks_of(parse_schedule_spec(more_smem, "p.json"), shape(96)),
            clocks_of(base, shape(96)));
  EXPECT_DOUBLE_EQ(clocks_of(parse_schedule_spec(more_smem, "p.json"), shape(64)),
                   clocks_of(base, shape(64)));
  json no_terms = j;
  for (const char* k : {"tau_cycles_fixed", "mask_instructions", "cta_fixed_cycles_per_d",
                        "fma_tensor_stall", "smem_p_cycles"})
    no_terms["calibrated"].erase(k);
  const ScheduleSpec old = parse_schedule_spec(no_terms, "old.json");
  EXPECT_EQ(old.tau_cycles_fixed, 0);
  EXPECT_EQ(old.mask_instructions, 2);
  EXPECT_EQ(old.cta_fixed_cycles_per_d, 0);
  EXPECT_EQ(old.fma_tensor_stall, 0);
  EXPECT_EQ(old.smem_p_cycles, 0);
  for (const char* flag : {"clock_from_stock", "rescale_stalls_tensor"}) {
    json bad = j;
    bad[flag] = 1;
    try {
      parse_schedule_spec(bad, "bad.json");
      ADD_FAILURE() << "no error for " << flag;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  }
}

// rescale_stalls_tensor (Note [O rescale and the tensor unit]): absent, O's rescale FMULs hold the
// tensor unit back like the softmax's FMAs; false, they do not, which shortens the stock kernel
// above d 128 (O rescaled beside GEMM0's MMAs, every iteration) more than tau's (which rescales a
// share of the iterations), and leaves a kernel without FMA stall unchanged.
TEST(Schedule, RescaleStallFlagPricesOnlyTheRescale) {
  json j = sm90_json();
  const ScheduleSpec& base = sm90();
  ASSERT_TRUE(base.rescale_stalls_tensor);
  json off_j = j;
  off_j["rescale_stalls_tensor"] = false;
  const ScheduleSpec off = parse_schedule_spec(off_j, "off.json");
  ScheduleInput tau = shape(256);
  tau.tricks.tau = 8;
  const double stock_gain = clocks_of(base, shape(256)) - clocks_of(off, shape(256));
  const double tau_gain = clocks_of(base, tau) - clocks_of(off, tau);
  EXPECT_GT(stock_gain, 0);
  EXPECT_GT(stock_gain, tau_gain);
  json no_stall_j = j;
  no_stall_j["calibrated"]["fma_tensor_stall"] = 0;
  json no_stall_off_j = no_stall_j;
  no_stall_off_j["rescale_stalls_tensor"] = false;
  EXPECT_DOUBLE_EQ(clocks_of(parse_schedule_spec(no_stall_j, "a.json"), shape(256)),
                   clocks_of(parse_schedule_spec(no_stall_off_j, "b.json"), shape(256)));
  // the round-13 candidate is round 11's file with the flag off and its constants refitted
  const std::string cand =
      std::string(FA4SIM_SOURCE_DIR) + "/data/schedule/sm90_candidate_r13.json";
  const ScheduleSpec c = parse_schedule_spec(read_json_file(cand, "schedule file"), cand);
  EXPECT_FALSE(c.rescale_stalls_tensor);
  EXPECT_EQ(c.tiles.size(), base.tiles.size());
  EXPECT_NE(c.wgmma_latency, base.wgmma_latency);
}

// The clock line of Note [Clock and duration], term by term. With a positive slope a kernel longer
// than 1e6 cycles gets a lower clock than without it, and the longer, the lower; the tensor share
// enters at the padded head dim (d 72 as 80); tma_clock_scale scales the load bound where it binds
// (d 144). Each field out of its range is refused by name.
TEST(Schedule, ClockDurationAndTmaScaleTerms) {
  json j = sm90_json();
  const ScheduleSpec& s = sm90();
  ASSERT_GT(s.clock_duration_slope, 0);
  json flat_j = j;
  flat_j["calibrated"].erase("clock_duration_slope");
  const ScheduleSpec flat = parse_schedule_spec(flat_j, "flat.json");
  EXPECT_EQ(flat.clock_duration_slope, 0);
  auto ratio = [&](const ScheduleInput& in) {
    return predict_schedule(h200(), s, in).clock_mhz / predict_schedule(h200(), flat, in).clock_mhz;
  };
  const ScheduleInput short_k = shape(128, false, 4096, 4, 16, 16),
                      long_k = shape(128, false, 16384, 4, 16, 16);
  ASSERT_GT(clocks_of(s, short_k), 1e6);
  EXPECT_LT(ratio(short_k), 1);
  EXPECT_LT(ratio(long_k), ratio(short_k));
  // the line itself, at d 72 (padded to 80)
  const auto p72 = predict_schedule(h200(), s, shape(72));
  const double u = p72.tensor_share_grid * 80 / 72;
  const double want =
      std::min(h200().sm_clock_mhz,
               s.clock_mhz_base / (1 + s.clock_tensor_slowdown * u +
                                   s.clock_duration_slope * std::log(p72.total_cycles / 1e6)));
  EXPECT_NEAR(p72.clock_mhz, want, 1e-9 * want);
  json slow_tma = j;
  slow_tma["calibrated"]["tma_clock_scale"] = 1.5;
  EXPECT_GT(predict_schedule(h200(), parse_schedule_spec(slow_tma, "t.json"), shape(144, true))
                .total_cycles,
            clocks_of(s, shape(144, true)));
  json bad = j;
  bad["calibrated"]["clock_duration_slope"] = 3;
  expect_refused_naming(bad, "calibrated.clock_duration_slope");
  bad = j;
  bad["calibrated"]["tma_clock_scale"] = 0;
  expect_refused_naming(bad, "calibrated.tma_clock_scale");
}

// The loads in nanoseconds (see the Note in schedule.h): with the probe's clock in the spec, the TMA table is time per tile,
// so where the loads bind an iteration's clocks follow the SM clock; where the tensor core binds
// they do not; without it the table's clocks hold at any clock. A given clock is the clock used.
TEST(Schedule, LoadsTakeNanosecondsWhenTheProbeClockIsKnown) {
  const ScheduleSpec& s = sm90();
  ASSERT_GT(s.tma_probe_clock_mhz, 0);
  auto at = [&](const ScheduleSpec& spec, ScheduleInput in, double mhz) {
    in.clock_mhz = mhz;
    return predict_schedule(h200(), spec, in);
  };
  const ScheduleInput d144 = shape(144, false, 8192, 4, 16, 16), d128 = shape(128);
  const auto slow = at(s, d144, 1500), fast = at(s, d144, 1900);
  ASSERT_EQ(slow.binding, "tma");
  EXPECT_DOUBLE_EQ(slow.clock_mhz, 1500);
  EXPECT_NEAR(slow.iter_cycles / fast.iter_cycles, 1500.0 / 1900.0, 1e-12);
  const double want =
      2 * s.tma_clock_scale * tma_tile_clocks(s, 144, slow.tile_n) * 1500 / s.tma_probe_clock_mhz;
  EXPECT_NEAR(slow.iter_cycles, want, 1e-9 * want);
  EXPECT_EQ(at(s, d128, 1500).iter_cycles, at(s, d128, 1900).iter_cycles);
  json j = sm90_json();
  j["tma"].erase("probe_clock_mhz");
  const ScheduleSpec in_clocks = parse_schedule_spec(j, "clocks.json");
  EXPECT_EQ(in_clocks.tma_probe_clock_mhz, 0);
  EXPECT_EQ(at(in_clocks, d144, 1500).iter_cycles, at(in_clocks, d144, 1900).iter_cycles);
  // the power-cap clock: a fixed point of the clock line and the loads' clocks
  const auto capped = predict_schedule(h200(), s, d144);
  const auto again = at(s, d144, capped.clock_mhz);
  EXPECT_NEAR(again.total_cycles, capped.total_cycles, 1e-4 * capped.total_cycles);
  ScheduleInput bad = d144;
  bad.clock_mhz = 50;
  EXPECT_THROW(predict_schedule(h200(), s, bad), Error);
  j["tma"]["probe_clock_mhz"] = 5;
  expect_refused_naming(j, "tma.probe_clock_mhz");
}

// The swizzle of a K/V tile: the widest of 128/64/32 bytes that divides a row of the tile's head
// dim (upstream's smem layout atom); d is padded to a multiple of 16 first (tile_hdim).
TEST(Schedule, TmaSwizzleFollowsTheTilesRow) {
  EXPECT_EQ(tma_swizzle_bytes(64), 128);
  EXPECT_EQ(tma_swizzle_bytes(128), 128);
  EXPECT_EQ(tma_swizzle_bytes(192), 128);
  EXPECT_EQ(tma_swizzle_bytes(96), 64);
  EXPECT_EQ(tma_swizzle_bytes(160), 64);
  EXPECT_EQ(tma_swizzle_bytes(224), 64);
  for (int d : {80, 112, 144, 176, 240}) EXPECT_EQ(tma_swizzle_bytes(d), 32) << d;
}

// The measured table: an exact entry scales with the tile's rows; a head dim the table lacks
// takes the per-box clocks of the nearest entry of its swizzle and alignment.
TEST(Schedule, TmaClocksComeFromTheTable) {
  ASSERT_FALSE(sm90().tma.empty());
  const TmaClocks* e144 = nullptr;
  const TmaClocks* e104 = nullptr;
  for (const TmaClocks& c : sm90().tma) {
    if (c.d == 144 && c.tile_d == 144 && c.swizzle == 32) e144 = &c;
    if (c.d == 104 && c.tile_d == 112 && c.swizzle == 32) e104 = &c;
  }
  ASSERT_TRUE(e144 && e104);
  EXPECT_DOUBLE_EQ(tma_tile_clocks(sm90(), 144, sm90().tma_rows), e144->clocks);
  EXPECT_DOUBLE_EQ(tma_tile_clocks(sm90(), 144, 2 * sm90().tma_rows), 2 * e144->clocks);
  EXPECT_DOUBLE_EQ(tma_tile_clocks(sm90(), 104, sm90().tma_rows),
                   e104->clocks);  // d 104: rows not aligned
  // d 208 is not in the table: 13 boxes of 32 bytes at the per-box clocks of a measured sw32 tile
  const double d208 = tma_tile_clocks(sm90(), 208, sm90().tma_rows);
  EXPECT_GT(d208, tma_tile_clocks(sm90(), 192, sm90().tma_rows));
  EXPECT_LT(d208, tma_tile_clocks(sm90(), 240, sm90().tma_rows));
  ScheduleSpec none = sm90();
  none.tma.clear();
  EXPECT_EQ(tma_tile_clocks(none, 144, 112), 0);
}

// At d 144 (32-byte swizzle) TMA brings K and V in slower than the MMAs use them: the load binds
// and the kernel is slower than d 160 (64-byte swizzle) per FLOP; without the table it is faster.
TEST(Schedule, TmaBindsWhereTheSwizzleIsNarrow) {
  const auto d144 = predict_schedule(h200(), sm90(), shape(144, true, 8192, 4, 16, 16));
  const auto d160 = predict_schedule(h200(), sm90(), shape(160, true, 8192, 4, 16, 16));
  EXPECT_EQ(d144.binding, "tma");
  EXPECT_DOUBLE_EQ(d144.util_tma, 1.0);  // the load sets the period
  EXPECT_LT(d160.util_tma, 0.95);        // busy, but the warps set the period
  EXPECT_GT(d144.total_cycles / d144.flops, d160.total_cycles / d160.flops);
  ScheduleSpec none = sm90();
  none.tma.clear();
  const auto free_loads = predict_schedule(h200(), none, shape(144, true, 8192, 4, 16, 16));
  EXPECT_LT(free_loads.total_cycles, d144.total_cycles);
  // d 64 and d 128 (the calibration's head dims) are not load-bound: the table changes nothing there
  for (int d : {64, 128})
    EXPECT_DOUBLE_EQ(clocks_of(none, shape(d)), clocks_of(sm90(), shape(d))) << d;
}

TEST(Schedule, TmaTableMissingAFieldNamesIt) {
  json j = sm90_json();
  j["tma"]["clocks"][0].erase("swizzle");
  expect_refused_naming(j, "tma.clocks.0.swizzle");
  j = sm90_json();
  j["tma"].erase("clocks");
  expect_refused_naming(j, "tma.clocks");
}

// As Note [O rescale before the GEMM] says: above d 128 (sm90.json's rescale_o_before_gemm_above_d) a
// warp rescales O between issuing S = QK^T and O += PV, at d 128 after O += PV; without the field
// it does so after O += PV at every head dim; the field out of range is refused by name.
TEST(Schedule, RescaleBeforeGemmSitsWhereTheKernelPutsIt) {
  const json j = sm90_json();
  const ScheduleSpec base = parse_schedule_spec(j, "sm90.json");
  ASSERT_EQ(base.rescale_before_gemm_above_d, 128);
  auto state = [](const SchedulePrediction& p, const char* name) {
    return p.path_breakdown.at(name).get<double>();
  };
  EXPECT_GT(state(predict_schedule(h200(), base, shape(160)), "O rescale before PV"), 0);
  EXPECT_EQ(state(predict_schedule(h200(), base, shape(128)), "O rescale before PV"), 0);
  json after = j;
  after.erase("rescale_o_before_gemm_above_d");
  const ScheduleSpec late = parse_schedule_spec(after, "a.json");
  EXPECT_EQ(state(predict_schedule(h200(), late, shape(160)), "O rescale before PV"), 0);
  // the same rescale, moved: the first iteration has no O to rescale before its first O += PV,
  // so fewer instructions per iteration on average, never more
  EXPECT_LT(predict_schedule(h200(), base, shape(160)).instructions_per_iteration,
            predict_schedule(h200(), late, shape(160)).instructions_per_iteration);
  EXPECT_NE(clocks_of(base, shape(160)), clocks_of(late, shape(160)));
  // d 128 keeps the rescale after O += PV: the field changes nothing there
  EXPECT_DOUBLE_EQ(clocks_of(base, shape(128)), clocks_of(late, shape(128)));
  json bad = j;
  bad["rescale_o_before_gemm_above_d"] = -8;
  expect_refused_naming(bad, "rescale_o_before_gemm_above_d");
}

// As Note [Issue window with three warpgroups] says, window_three_warpgroups sets the issue window of the
// three-warpgroup tiles (d <= 96) only: d 64 with half the exps emulated changes with it, d 128
// (two warpgroups) does not; without the field the shared window holds; out of range it is refused.
TEST(Schedule, ThreeWarpgroupWindowAppliesToTileM192Only) {
  const json j = sm90_json();
  json one = j, four = j, none = j;
  one["window_three_warpgroups"]["value"] = 1;
  four["window_three_warpgroups"]["value"] = 4;
  none.erase("window_three_warpgroups");
  const ScheduleSpec s1 = parse_schedule_spec(one, "1.json"),
                     s4 = parse_schedule_spec(four, "4.json"),
                     s0 = parse_schedule_spec(none, "0.json");
  EXPECT_EQ(s0.window_three_warpgroups, 0);
  ScheduleInput d64 = shape(64), d128 = shape(128);
  d64.tricks.emu_fraction = d128.tricks.emu_fraction = 0.5;
  EXPECT_NE(clocks_of(s1, d64), clocks_of(s4, d64));
  EXPECT_DOUBLE_EQ(clocks_of(s1, d128), clocks_of(s4, d128));
  json same = none;
  same["window_three_warpgroups"] = same["window"];
  EXPECT_DOUBLE_EQ(clocks_of(parse_schedule_spec(same, "s.json"), d64), clocks_of(s0, d64));
  json bad = j;
  bad["window_three_warpgroups"]["value"] = 0;
  expect_refused_naming(bad, "window_three_warpgroups");
}

// As Note [PV wait with tau] says, calibrated.tau_pv_wait_cycles is charged with tau > 0 in the
// non-causal kernel where O is rescaled before the GEMM (above d 128) and nowhere else: more of it
// slows tau 8 at d 160, leaves tau 8 at d 128, tau 8 at d 160 causal and stock at d 160 as they
// were; without the field the term is 0; out of range it is refused by name.
TEST(Schedule, TauPvWaitIsChargedAboveD128WithTauOnly) {
  const json j = sm90_json();
  const ScheduleSpec base = parse_schedule_spec(j, "sm90.json");
  json more = j;
  more["calibrated"]["tau_pv_wait_cycles"] = base.tau_pv_wait_cycles + 500;
  const ScheduleSpec longer = parse_schedule_spec(more, "w.json");
  ScheduleInput tau160 = shape(160), tau128 = shape(128);
  tau160.tricks.tau = tau128.tricks.tau = 8;
  EXPECT_GT(clocks_of(longer, tau160), clocks_of(base, tau160));
  EXPECT_DOUBLE_EQ(clocks_of(longer, tau128), clocks_of(base, tau128));
  EXPECT_DOUBLE_EQ(clocks_of(longer, shape(160)), clocks_of(base, shape(160)));
  ScheduleInput causal160 = shape(160, true);
  causal160.tricks.tau = 8;
  EXPECT_DOUBLE_EQ(clocks_of(longer, causal160), clocks_of(base, causal160));
  json none = j;
  none["calibrated"].erase("tau_pv_wait_cycles");
  EXPECT_EQ(parse_schedule_spec(none, "n.json").tau_pv_wait_cycles, 0);
  json bad = j;
  bad["calibrated"]["tau_pv_wait_cycles"] = -1;
  expect_refused_naming(bad, "tau_pv_wait_cycles");
}
