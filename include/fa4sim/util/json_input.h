// json_input.h: the one reader of JSON input files (report --baseline, roofline --arch-file and
// --measured, data/archs, data/published, the committed GPU and fit data).
//
// Note [JSON input depth]: nlohmann/json parses iteratively but copies, compares, dumps and
// destroys a value recursively, so a file of 150,000 nested brackets overflows the stack long
// after it parsed. Every JSON input is therefore scanned for its nesting depth before it is
// parsed, and refused beyond kMaxJsonDepth levels: fa4sim's own files nest fewer than 10.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "fa4sim/util/report.h"

namespace fa4sim {

inline constexpr size_t kMaxJsonDepth = 256;

// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count).
// Stops counting at `limit` + 1.
size_t json_nesting_depth(const std::string& text, size_t limit = kMaxJsonDepth);

// Parses `text` as JSON, or throws Error "<not_json>: <why>" (e.g. not_json = "baseline file
// 'b/x.json' is not JSON", why = "nested deeper than 256 levels" or the parser's message) instead
// of crashing (Note [JSON input depth]). `hint` replaces each message's own hint.
json parse_json_input(const std::string& text, const std::string& not_json,
                      const std::string& hint = "");

// The bytes of the file `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> read_text_file(const std::string& path);

// Reads and parses the file `path`. Throws Error "<what> '<path>' does not exist", "... is a
// directory", "cannot read ...", or "<what> '<path>' is not valid JSON: ...".
json read_json_input(const std::string& path, const std::string& what,
                     const std::string& hint = "");

// As read_json_input, but nullopt instead of an error (optional data files: a missing or
// damaged one is reported by its caller as absent).
std::optional<json> try_read_json_input(const std::string& path);

}  // namespace fa4sim
