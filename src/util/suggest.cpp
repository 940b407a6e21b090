#include "fa4sim/util/suggest.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fa4sim/util/error.h"

namespace fa4sim {

static size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> did_you_mean(const std::string& s,
                                        const std::vector<std::string>& cands) {
  std::optional<std::string> best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : cands) {
    const size_t d = levenshtein(s, c);
    if (d < best_d) best_d = d, best = c;
  }
  const size_t limit = std::max<size_t>(2, s.size() / 3);
  if (best && best_d <= limit) return best;
  return std::nullopt;
}

void throw_unknown_choice(const std::string& what, const std::string& s,
                          const std::vector<std::string>& choices) {
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  std::string hint = "valid: " + list;
  if (auto m = did_you_mean(s, choices))
    hint = fmt::format("did you mean '{}'? valid: {}", *m, list);
  throw Error(fmt::format("unknown {} '{}'", what, s), hint);
}

}  // namespace fa4sim
