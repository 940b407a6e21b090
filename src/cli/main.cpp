// fa4sim: the command-line shell. Parses, dispatches through the one subcommand table
// (commands.cpp), and is the only place that turns errors into messages and exit codes:
//   0 ok, 1 a check ran and failed, 2 bad input (usage, config, files), 3 no CUDA device.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "cli_util.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/version.h"

namespace {

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "fa4sim: error: %s\n", msg.c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fa4sim;
  CLI::App app{"fa4sim: FlashAttention-4 softmax numerics and speed, emulated bit for bit.\n"
               "Run 'fa4sim help <command>' (or 'fa4sim <command> --help') for the options of a command."};
  app.name("fa4sim");
  app.set_version_flag("-V,--version", std::string("fa4sim ") + version() + " (" + git_describe() + ")");
  app.require_subcommand(1);
  app.fallthrough(false);

  std::vector<std::string> names;
  for (const auto& c : cli::commands()) {
    c.add(app);
    names.push_back(c.name);
  }

  // No arguments: the usage, and exit 2 (nothing was done).
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stdout);
    return fail("give a command (the list is above)", kExitUsage);
  }
  // `fa4sim help [CMD [SUB]]` = `fa4sim [CMD [SUB]] --help`.
  std::vector<char*> args(argv, argv + argc);
  static char help_flag[] = "--help";
  if (std::string(argv[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back(help_flag);
    argc = int(args.size());
    argv = args.data();
  }

  // Unknown subcommand: say so and suggest the nearest, before CLI11 calls it an extra argument.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    bool known = false;
    for (const auto& n : names) known = known || n == first;
    if (!known) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      std::string hint = "commands: " + list;
      if (auto m = cli::did_you_mean(first, names))
        hint = fmt::format("did you mean '{}'? commands: {}", *m, list);
      return fail(fmt::format("unknown command '{}' ({})", first, hint), kExitUsage);
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The deepest subcommand given ("gpu attention"), for the hint and for unknown options.
    CLI::App* sub = &app;
    std::string path;
    while (!sub->get_subcommands().empty()) {
      sub = sub->get_subcommands().front();
      path += " " + sub->get_name();
    }
    const std::string where = fmt::format("fa4sim{} --help", path);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      // CLI11 says "not expected: e4m3 --dtype" (backwards): name the unknown option instead.
      std::vector<std::string> known;
      for (const auto* o : sub->get_options())
        if (!o->get_lnames().empty()) known.push_back("--" + o->get_lnames().front());
      for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9') || a[1] == '.') continue;
        a = a.substr(0, a.find('='));
        bool found = false;
        for (const CLI::App* s = sub; s != nullptr && !found; s = s->get_parent())
          found = s->get_option_no_throw(a) != nullptr;
        if (found) continue;
        std::string hint = fmt::format("see '{}'", where);
        if (auto m = cli::did_you_mean(a, known)) hint = fmt::format("did you mean '{}'? {}", *m, hint);
        return fail(fmt::format("unknown option '{}' for 'fa4sim{}' ({})", a, path, hint), kExitUsage);
      }
    }
    return fail(fmt::format("{} (see '{}')", e.what(), where), kExitUsage);
  } catch (const Error& e) {
    return fail(e.what(), e.exit_code());
  } catch (const std::bad_alloc&) {
    return fail("out of memory (try fewer samples, threads or a smaller problem)", kExitUsage);
  } catch (const std::exception& e) {
    return fail(fmt::format("{} (this is a bug in fa4sim: please report it)", e.what()), kExitUsage);
  }
  return kExitOk;
}
