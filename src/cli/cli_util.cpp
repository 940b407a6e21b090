#include "cli_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "fa4sim/core/online_softmax.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/parse.h"
#include "fa4sim/util/suggest.h"

namespace fa4sim::cli {

CLI::Option* add_hidden_alias(CLI::App* sub, const std::string& old_name, std::string& var) {
  return sub->add_option(old_name, var)->group("");
}

bool given(const CLI::App* sub, const std::string& name, const std::string& alias) {
  return sub->count(name) > 0 || (!alias.empty() && sub->count(alias) > 0);
}

const CLI::Validator& non_empty_path() {
  static const CLI::Validator v(
      [](std::string& s) {
        return s.empty() ? std::string("needs a path (a file name, or - for stdout), got ''")
                         : std::string();
      },
      "", "non-empty path");
  return v;
}

CLI::Option* checked(CLI::Option* o, const std::string& range, ValueCheck check) {
  const std::string opt = o->get_name();
  // The check throws fa4sim::Error, which CLI11 passes through to main (it catches only its own
  // ValidationError), so the message is the command's, not CLI11's.
  return o->check(CLI::Validator(
      [opt, check = std::move(check)](std::string& value) {
        if (!value.empty()) check(opt, value);
        return std::string();
      },
      range));
}

CLI::Option* int_in(CLI::Option* o, int64_t lo, int64_t hi) {
  return checked(o, range_text(lo, hi), [lo, hi](const std::string& opt, const std::string& v) {
    parse_int(opt, v, lo, hi);
  });
}

CLI::Option* ints_in(CLI::Option* o, int64_t lo, int64_t hi) {
  return checked(o, range_text(lo, hi), [lo, hi](const std::string& opt, const std::string& v) {
    parse_int_list(opt, v, lo, hi);
  });
}

CLI::Option* zero_ones(CLI::Option* o) {
  return checked(o, "",
                 [](const std::string& opt, const std::string& v) { parse_int_list(opt, v, 0, 1); })
      ->type_name("0|1[,0|1...]");
}

CLI::Option* log2_knob(CLI::Option* o) {
  return checked(o, fmt::format("0..{:g}", kMaxLog2Knob),
                 [](const std::string& opt, const std::string& v) {
                   check_log2_knob(opt, parse_double(opt, v));
                 });
}

CLI::Option* log2_knobs(CLI::Option* o) {
  return checked(o, fmt::format("0..{:g}", kMaxLog2Knob),
                 [](const std::string& opt, const std::string& v) {
                   for (double x : parse_double_list(opt, v)) check_log2_knob(opt, x);
                 });
}

CLI::Option* positive(CLI::Option* o, const std::string& hint) {
  return checked(o, ">0", [hint](const std::string& opt, const std::string& v) {
    if (!(parse_double(opt, v) > 0))
      throw Error(fmt::format("{} must be finite and > 0, got {}", opt, v), hint);
  });
}

// ---- the input policy (docs/input-policy.md)

namespace {
std::vector<const CLI::Option*>& options_with_own_empty_message() {
  static std::vector<const CLI::Option*> v;
  return v;
}
}  // namespace

CLI::Option* refuses_empty_itself(CLI::Option* o) {
  options_with_own_empty_message().push_back(o);
  return o;
}

void refuse_empty_values(CLI::App& app) {
  const auto& own = options_with_own_empty_message();
  for (CLI::Option* o : app.get_options([](CLI::Option*) { return true; })) {
    // Flags and positionals take no option value; an option whose --help says what '' means
    // (gpu attention --python '') keeps that meaning.
    if (o->get_lnames().empty() || o->get_expected_min() == 0) continue;
    if (o->get_description().find("'' =") != std::string::npos) continue;
    if (std::find(own.begin(), own.end(), o) != own.end()) continue;
    const std::string name = "--" + o->get_lnames().front();
    o->check(CLI::Validator(
        [name](std::string& v) {
          if (v.empty())
            throw Error(fmt::format("{} needs a value, got an empty one", name),
                        "leave the option out for its default");
          return std::string();
        },
        ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    refuse_empty_values(*sub);
}

void warn_ignored(const std::string& option, const std::string& with, const std::string& why) {
  std::fprintf(stderr, "fa4sim: warning: %s has no effect with %s (%s)\n", option.c_str(),
               with.c_str(), why.c_str());
}

void add_common_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option("--json", o.json_path,
                  "Write the JSON report to FILE (atomically), or to stdout with '-'")
      ->type_name("FILE|-")
      ->check(non_empty_path());
  int_in(sub->add_option("--threads", o.threads, "Worker threads (0 = all cores)"), 0, 1024)
      ->type_name("T");
}

OptionGiven given_in(const CLI::App* sub) {
  return [sub](const std::string& name) { return sub->count(name) > 0; };
}

}  // namespace fa4sim::cli
