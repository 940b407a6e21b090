// parse.h: all of fa4sim's option-string parsing in one place, for the whole tool: the option
// sets shared by the CLI and Python (include/fa4sim/options/), the CLI's own options (src/cli)
// and the library's spec parsers (`--dist normal:1.5`, `--exp schedule:10,4,1` in rescale.cpp and
// row_sim.cpp). First the generic pieces (splitting, whole-string numbers: their callers word the
// messages), then the typed option values, whose messages name the option and are the same for
// every command: "fa4sim: error: <what> (<hint>)", exit 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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

// ---- typed option values

// Parses a whole string as a double; "nan"/"inf" allowed only when allow_nonfinite.
double parse_double(const std::string& opt, const std::string& s, bool allow_nonfinite = false);
// Parses an integer exactly, never through a double (also "1e6"-style exact integers: 2.5e3,
// 9007199254740993). Range-checked, inclusive.
int64_t parse_int(const std::string& opt, const std::string& s, int64_t lo, int64_t hi);
// The items of a comma-separated list option, trimmed of blanks; an empty item or an item given
// twice is an error naming `opt` ("--tau needs a number in every item ..."; docs/input-policy.md).
// `noun` says what an item is: "a number", "a name".
std::vector<std::string> list_items(const std::string& opt, const std::string& s,
                                    const std::string& noun);
// Comma-separated lists through list_items; numbers that repeat in another spelling (8, 8.0) are
// refused too.
std::vector<int64_t> parse_int_list(const std::string& opt, const std::string& s, int64_t lo,
                                    int64_t hi);
std::vector<double> parse_double_list(const std::string& opt, const std::string& s);
// split_on(s, sep) with every item trimmed of blanks (trim_blanks).
std::vector<std::string> split(const std::string& s, char sep);
// "LO,HI" with LO < HI, both finite.
std::pair<double, double> parse_range(const std::string& opt, const std::string& s);
// Picks `s` from `choices` or throws an error that lists them and suggests the nearest.
std::string parse_choice(const std::string& opt, const std::string& s,
                         const std::vector<std::string>& choices);

// How --help writes lo..hi: "1..65535", "1..2^20", "0..2^53", "0..2^63-1".
std::string range_text(int64_t lo, int64_t hi);

}  // namespace fa4sim
