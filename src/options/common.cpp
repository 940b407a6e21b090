// common.cpp: the pieces every option set shares (see common.h).
#include "fa4sim/options/common.h"

#include "fa4sim/util/parallel.h"

namespace fa4sim {

int resolved_threads(const CommonOptions& o) {
  return o.threads > 0 ? o.threads : default_threads();
}

bool no_options_given(const std::string&) { return false; }

const Format& parse_dtype(const std::string& opt, const std::string& s, FormatRole role) {
  return format_by_name(parse_choice(opt, s, format_names(role)));
}

std::vector<const Format*> parse_dtype_list(const std::string& opt, const std::string& s,
                                            FormatRole role) {
  std::vector<const Format*> out;
  for (const auto& item : list_items(opt, s, "a format"))
    out.push_back(&parse_dtype(opt, item, role));
  return out;
}

}  // namespace fa4sim
