// json_values.h: report results (nlohmann::json) as Python values and back, for the extension
// `fa4sim._fa4sim` (module.cpp). Analyses hand their `results` to Python as dicts, lists, str,
// int, float, bool and None built here, not as JSON text: the values the CLI's --json writes
// (non-finite numbers as the texts "nan", "inf", "-inf", as with_nonfinite_as_text() makes them),
// read without a JSON round trip.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>

#include "fa4sim/util/error.h"
#include "fa4sim/util/report.h"

namespace fa4sim::python {

namespace nb = nanobind;

// A JSON value as the Python value json.loads would give for its text.
inline nb::object to_py(const json& j) {
  switch (j.type()) {
    case json::value_t::boolean: return nb::bool_(j.get<bool>());
    case json::value_t::number_integer: return nb::int_(j.get<int64_t>());
    case json::value_t::number_unsigned: return nb::int_(j.get<uint64_t>());
    case json::value_t::number_float: {
      const double x = j.get<double>();
      return std::isfinite(x) ? nb::object(nb::float_(x)) : nb::none();  // JSON text: null
    }
    case json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      return nb::str(s.data(), s.size());
    }
    case json::value_t::array: {
      nb::list l;
      for (const json& e : j) l.append(to_py(e));
      return l;
    }
    case json::value_t::object: {
      nb::dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d[nb::str(it.key().data(), it.key().size())] = to_py(it.value());
      return d;
    }
    default:  // null, binary, discarded
      return nb::none();
  }
}

// A report's results as the CLI's --json writes them (non-finite numbers as text).
inline nb::object results_to_py(const Report& r) {
  return to_py(with_nonfinite_as_text(r.results));
}

// A Python value (None, bool, int, float, str, list, tuple, dict with str keys) as JSON; anything
// else throws Error naming `where`.
inline json from_py(nb::handle h, const std::string& where) {
  if (h.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::int_>(h)) {
    int64_t v = 0;
    if (!nb::try_cast<int64_t>(h, v)) throw Error(where + ": an integer beyond 64 bits");
    return v;
  }
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    json a = json::array();
    size_t i = 0;
    for (nb::handle e : h) a.push_back(from_py(e, where + "[" + std::to_string(i++) + "]"));
    return a;
  }
  if (nb::isinstance<nb::dict>(h)) {
    json o = json::object();
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(k)) throw Error(where + ": keys must be strings");
      const std::string key = nb::cast<std::string>(k);
      o[key] = from_py(v, where + "['" + key + "']");
    }
    return o;
  }
  throw Error(where + ": " + nb::cast<std::string>(nb::str(nb::handle(h.type()).attr("__name__"))) +
              " is not a JSON value (give numbers, strings, lists, dicts)");
}

}  // namespace fa4sim::python
