// published.h: the published figures `fa4sim report` sets fa4sim's numbers against, read at run
// time from <data>/published/<name>.json (the data folder of Note [Install layout]).
//
// File format (schema "fa4sim/published-v1"):
//   {"schema": "fa4sim/published-v1",
//    "section": "exp2",                       the report section that reads it first
//    "sources": {"<label>": "<citation>"},    what the short source labels below stand for
//    "values": {"<key>": {"value": 8.77e-5,   the published number (null: none was published)
//                         "text": "2^-9",      optional: how the report prints it
//                         "source": "...",     where it was published (docs/facts.md, Sources)
//                         ...}}}               section-specific fields (roofline: the model quantity)
// Every key a section asks for must be there; a missing file, a file that is not JSON, a wrong
// schema or a value without a source is an Error naming the file and what is wrong.
#pragma once

#include <string>

#include "fa4sim/util/report.h"

namespace fa4sim {

class PublishedValues {
 public:
  // Reads and checks <data_dir()>/published/<name>.json.
  static PublishedValues load(const std::string& name);
  // Checks an already parsed file; `path` names it in errors.
  static PublishedValues parse(const json& j, const std::string& path);

  double value(const std::string& key) const;      // Error when missing or null
  std::string text(const std::string& key) const;  // "text", else the value in its shortest form
  const std::string& source(const std::string& key) const;
  const json& entry(const std::string& key) const;  // the whole entry, for section-specific fields
  const json& values() const { return values_; }    // every entry, in file order
  const std::string& path() const { return path_; }

  // An Error about entry `key` of this file (a section-specific field that is wrong).
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  std::string path_;
  json values_;
};

// The shortest decimal that reads back as `v`, without an exponent's leading zeros ("1.44e-7").
std::string compact_number(double v);

}  // namespace fa4sim
