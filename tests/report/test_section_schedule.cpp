// The schedule section of `fa4sim report` (src/report/section_schedule.cpp): its re-predictions of
// every stored H200 configuration agree with what scripts/datagen/schedule_fit.py eval stored,
// alone and with the earlier plans' kernel factors (Note [Kernel factors]), set by set, and so do
// its scores of the tricks effects beyond their spread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "cli_helpers.h"
#include "fa4sim/analysis/roofline.h"
#include "fa4sim/report/context.h"
#include "fa4sim/report/sections.h"

using namespace fa4sim;

namespace {

json read(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

}  // namespace

// Slow: the section predicts about 1900 configurations (about 5 CPU-s).
TEST(ScheduleReportSlow, EverySetAgreesWithTheStoredEvaluations) {
  const auto dir = fa4sim::test::temp_dir("schedule-section");
  setenv("PATH", "/nonexistent", 1);  // no python3: the figure is not drawn
  ReportContext ctx(dir.string(), 1);
  report_schedule(ctx);
  const json out = read((dir / "schedule.json").string())["results"];
  const std::string data = roofline_data_dir() + "/schedule/";
  const json alone = read(data + "eval_h200.json"),
             earlier = read(data + "eval_h200_kernel_factors_earlier.json");
  int held_n = 0, held5 = 0, held10 = 0, kf5 = 0, kf10 = 0, beyond = 0, signs = 0, within3 = 0;
  for (const auto& [plan, p] : alone["plans"].items()) {
    ASSERT_TRUE(out.contains("h200_" + plan)) << plan;
    const json& got = out["h200_" + plan];
    EXPECT_EQ(got["stale"], 0) << plan;
    EXPECT_EQ(got["configurations"], p["summary"]["configurations"]) << plan;
    EXPECT_EQ(got["within_5pct"], p["summary"]["within_5pct"]) << plan;
    EXPECT_EQ(got["within_10pct"], p["summary"]["within_10pct"]) << plan;
    ASSERT_TRUE(earlier["plans"].contains(plan)) << plan;
    const json& s = earlier["plans"][plan]["summary"];
    const json& kf = out["h200_kf_" + plan];
    EXPECT_EQ(kf["stale"], 0) << plan;
    EXPECT_EQ(kf["within_5pct"], s["within_5pct"]) << plan;
    EXPECT_EQ(kf["within_10pct"], s["within_10pct"]) << plan;
    if (plan.starts_with("heldout") && std::atoi(plan.c_str() + 7) >= 14) {
      held_n += got["configurations"].get<int>();
      held5 += got["within_5pct"].get<int>(), held10 += got["within_10pct"].get<int>();
      kf5 += s["within_5pct"].get<int>(), kf10 += s["within_10pct"].get<int>();
      beyond += s["effects_beyond_spread"].get<int>();
      signs += s["effects_sign_right"].get<int>(),
          within3 += s["effects_within_3_points"].get<int>();
    }
  }
  ASSERT_GE(held_n, 384);  // heldout14 and later: eight sets or more of twelve shapes x four kinds
  ASSERT_EQ(ctx.findings.size(), 4u);
  EXPECT_EQ(ctx.findings[0].fa4sim, std::to_string(held5) + " / " + std::to_string(held10) +
                                        " of " + std::to_string(held_n));
  EXPECT_EQ(ctx.findings[1].fa4sim,
            std::to_string(kf5) + " / " + std::to_string(kf10) + " of " + std::to_string(held_n));
  // the tricks effects, re-predicted, score as the stored summaries say, and effect_floor.json
  // holds the same counts (its floor is printed beside them)
  EXPECT_EQ(ctx.findings[2].fa4sim, std::to_string(signs) + " / " + std::to_string(within3) +
                                        " of " + std::to_string(beyond));
  const json& eff = out["h200_kf_effects_held_out"];
  EXPECT_EQ(eff["stale"], 0);
  EXPECT_EQ(eff["effect_floor_current"], true);
  EXPECT_NE(ctx.findings[2].note.find("would be expected to get"), std::string::npos);
  EXPECT_EQ(out["blackwell_published_held_out"]["stale"], 0);
  std::filesystem::remove_all(dir);
}
