// The roofline section's published-figures check (src/report/section_roofline.cpp): every
// figure of data/published/roofline.json and every schedule fraction matches the model.
#include <gtest/gtest.h>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/report/sections.h"
#include "fa4sim/util/error.h"

using namespace fa4sim;

TEST(RooflineReport, PublishedFiguresAllMatch) {
  std::vector<ArchSpec> archs;
  for (const auto& n : known_arch_names()) archs.push_back(load_known_arch(n));
  Report r;
  add_published_comparison(r, archs, PublishedValues::load("roofline"));
  ASSERT_GE(r.results["published"].size(), 18u);
  for (const auto& p : r.results["published"]) EXPECT_TRUE(p["match"].get<bool>()) << p.dump();
}

TEST(RooflineReport, FindingsPassAndAFigureOffByOneFails) {
  std::vector<ArchSpec> archs;
  for (const auto& n : known_arch_names()) archs.push_back(load_known_arch(n));
  json j = json::parse(R"({"schema": "fa4sim/published-v1", "values": {
      "B200 fwd d=128: MMA cycles": {"value": 1025, "source": "s", "arch": "b200", "direction": "fwd",
        "dtype": "bf16", "cta_group": 1, "d": 128, "quantity": "cycles_mma", "finding": true}}})");
  ReportContext ctx("unused", 1);
  Report r;
  add_published_comparison(r, archs, PublishedValues::parse(j, "p.json"), &ctx);
  EXPECT_FALSE(r.results["published"][0]["match"].get<bool>());
  ASSERT_GE(ctx.findings.size(), 2u);
  EXPECT_EQ(ctx.findings[0].fa4sim, "1024");
  EXPECT_EQ(ctx.findings[0].published, "1025");
  EXPECT_EQ(ctx.findings[0].pass, false);
  EXPECT_NE(ctx.findings_markdown().find("| FAIL |"), std::string::npos) << ctx.findings_markdown();
  // An entry whose model quantity is unknown is a malformed file.
  j["values"]["B200 fwd d=128: MMA cycles"]["quantity"] = "cycles_tma";
  Report r2;
  EXPECT_THROW(add_published_comparison(r2, archs, PublishedValues::parse(j, "p.json")), Error);
}
