// baseline.h: `fa4sim report --baseline DIR`, the CI gate (Note [Report baseline]).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "fa4sim/util/report.h"

namespace fa4sim {

struct MovedResult {
  std::string where;  // "results.formats[3].max_finite"
  std::string was, now;
  std::string tolerance;
};

// The results that moved between `was` and `now` (two reports' `results`), under `where`.
std::vector<MovedResult> compare_results(const json& was, const json& now,
                                         const std::string& where = "results");

// Compares every JSON file listed in `sections` (an index's "sections") in `out_dir` with the
// file of the same name in `baseline_dir`; prints each moved result and a count on `log`.
// Returns the number of results that moved. Error when a file cannot be read.
size_t compare_with_baseline(const std::string& baseline_dir, const json& sections,
                             const std::string& out_dir, std::FILE* log = stderr);

}  // namespace fa4sim
