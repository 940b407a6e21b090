// parse.h: the generic pieces of option-string parsing, one set for the whole tool: the CLI's
// typed options (src/cli/cli_util) and the library's own spec parsers (`--dist normal:1.5`,
// `--exp schedule:10,4,1` in rescale.cpp and row_sim.cpp) split and read numbers with these.
// The messages stay with the callers: each names its option in its own words.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fa4sim {

// "a:b:c" -> {"a", "b", "c"}; "" -> {""}; no trimming (option values are single shell words).
std::vector<std::string> split_on(const std::string& s, char sep);

// `s` without the spaces and tabs at either end.
std::string trim_blanks(const std::string& s);

// The whole of `s` read by std::strtod (so leading blanks, "inf", "nan" and hex floats are
// accepted), or nullopt when `s` is empty or strtod stops before its end.
std::optional<double> strtod_whole(const std::string& s);

// `s` with every control byte and every byte above 0x7e written as \xNN, for quoting user input
// in a message (a NUL would cut it, an ESC would reach the terminal).
std::string printable_text(const std::string& s);

// The finite number `s`; otherwise Error "<what>: expected a finite number, got '<s>'" (exit 2).
double parse_finite(const std::string& what, const std::string& s);

}  // namespace fa4sim
