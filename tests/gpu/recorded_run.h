// recorded_run.h: the GPU report tests' view of a run recorded on an H200 (data/gpu/): load it,
// and check that a report rendered from hand-built results gives back its command, params and
// results, key for key and in order (fa4sim's json keeps insertion order).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "fa4sim/util/report.h"

namespace fa4sim::test {

// A recorded H200 run, data/gpu/<path>.
inline json recorded(const std::string& path) {
  std::ifstream f(std::string(FA4SIM_SOURCE_DIR) + "/data/gpu/" + path);
  EXPECT_TRUE(f.good()) << path;
  return json::parse(f);
}

inline void expect_recorded(const Report& r, const json& rec) {
  EXPECT_EQ(r.command, rec.at("command").get<std::string>());
  EXPECT_EQ(r.params, rec.at("params")) << r.params.dump();
  EXPECT_EQ(r.results, rec.at("results")) << r.results.dump();
}

}  // namespace fa4sim::test
