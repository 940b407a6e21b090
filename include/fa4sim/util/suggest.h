// suggest.h: "did you mean" for names (formats, sections, choices), shared by the library and
// the CLI (ninja-style suggestions on typos).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fa4sim {

// Levenshtein-nearest candidate within a small distance (max(2, |s|/3)), or nullopt.
std::optional<std::string> did_you_mean(const std::string& s,
                                        const std::vector<std::string>& cands);

// The fa4sim::Error for an unknown name: "unknown <what> '<s>' (did you mean 'x'? valid: a, b)".
[[noreturn]] void throw_unknown_choice(const std::string& what, const std::string& s,
                                       const std::vector<std::string>& choices);

}  // namespace fa4sim
