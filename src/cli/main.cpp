// fa4sim: the command-line shell. Parses, dispatches through the one subcommand table
// (commands.cpp), and is the only place that turns errors into messages and exit codes:
//   0 ok, 1 a check ran and failed, 2 bad input (usage, config, files), 3 no CUDA device.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "cli_util.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/paths.h"
#include "fa4sim/util/suggest.h"
#include "fa4sim/util/version.h"

namespace {

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "fa4sim: error: %s\n", msg.c_str());
  return code;
}

std::vector<CLI::App*> subcommands_of(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

// Walks the command words before the first option ("gpu upstream info") and names the first one
// that is not a command of its parent, with the nearest as a suggestion. Empty when all are known.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* cur = &app;
  std::string path;
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    const std::vector<CLI::App*> subs = subcommands_of(cur);
    if (subs.empty()) break;  // a leaf command: the rest are its arguments
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    for (CLI::App* s : subs) {
      names.push_back(s->get_name());
      if (s->get_name() == argv[i]) next = s;
    }
    if (next) {
      cur = next;
      path += " " + next->get_name();
      continue;
    }
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string where = path.empty() ? "" : fmt::format(" for 'fa4sim{}'", path);
    std::string hint = "commands: " + list;
    if (auto m = fa4sim::did_you_mean(argv[i], names))
      hint = fmt::format("did you mean '{}'? commands: {}", *m, list);
    return fmt::format("unknown command '{}'{} ({})", argv[i], where, hint);
  }
  return {};
}

// `fa4sim --threads 2 exp2`: options belong to a command and go after it.
std::string option_before_command(CLI::App& app, int argc, char** argv) {
  const std::string first = argv[1];
  if (first.empty() || first[0] != '-' || first == "-h" || first == "--help" || first == "-V" ||
      first == "--version")
    return {};
  for (int i = 2; i < argc; ++i)
    for (CLI::App* s : subcommands_of(&app))
      if (s->get_name() == argv[i])
        return fmt::format("{} goes after the command (fa4sim {} {} ...)",
                           first.substr(0, first.find('=')), argv[i], first);
  return {};
}

// A CLI11 parse error as the house message, naming the unknown option where there is one.
int parse_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
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
      if (auto m = fa4sim::did_you_mean(a, known))
        hint = fmt::format("did you mean '{}'? {}", *m, hint);
      return fail(fmt::format("unknown option '{}' for 'fa4sim{}' ({})", a, path, hint),
                  fa4sim::kExitUsage);
    }
  }
  return fail(fmt::format("{} (see '{}')", e.what(), where), fa4sim::kExitUsage);
}

int run(int argc, char** argv) {
  using namespace fa4sim;
  CLI::App app{
      "fa4sim: FlashAttention-4 softmax numerics and speed, emulated bit for bit.\n"
      "Run 'fa4sim help <command>' (or 'fa4sim <command> --help') for the options of a command."};
  app.name("fa4sim");
  app.set_version_flag("-V,--version",
                       std::string("fa4sim ") + version() + " (" + git_describe() + ")");
  app.require_subcommand(1);
  app.fallthrough(false);

  // `fa4sim help [CMD [SUB]]` = `fa4sim [CMD [SUB]] --help`.
  std::vector<char*> args(argv, argv + argc);
  static char help_flag[] = "--help";
  if (argc > 1 && std::string(argv[1]) == "help") {
    args.erase(args.begin() + 1);
    args.push_back(help_flag);
    argc = int(args.size());
    argv = args.data();
  }
  // Note [One command built]: a run names its command first (`fa4sim exp2 ...`), and only that
  // command's options are built: building every command's options took most of a start's CPU,
  // and the tests start fa4sim about a thousand times. Once a command is chosen the others play
  // no part in parsing (require_subcommand(1) stops the search for further commands at the root)
  // nor in any message (a command's --help and its errors name only it and its parents). Without
  // a known command first (no arguments, --help, an option or an unknown word) every command is
  // built: the usage lists them all and the messages name them.
  const cli::CommandEntry* chosen = nullptr;
  if (argc > 1)
    for (const auto& c : cli::commands())
      if (c.name == std::string(argv[1])) chosen = &c;
  if (chosen != nullptr)
    chosen->add(app);
  else
    for (const auto& c : cli::commands()) c.add(app);
  cli::refuse_empty_values(app);  // docs/input-policy.md

  // No arguments: the usage, and exit 2 (nothing was done).
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stdout);
    return fail("give a command (the list is above)", kExitUsage);
  }
  // Unknown (sub)command or an option before the command: say so before CLI11 calls it an
  // extra argument or asks for "a subcommand".
  if (const std::string m = unknown_command(app, argc, argv); !m.empty())
    return fail(m, kExitUsage);
  if (const std::string m = option_before_command(app, argc, argv); !m.empty())
    return fail(m, kExitUsage);
  // A copied binary reads the source tree it was built from: say so (Note [Install layout]).
  if (const std::string cmd = argv[1];
      (cmd == "roofline" || cmd == "report") && data_from_foreign_source_tree())
    std::fprintf(
        stderr,
        "fa4sim: warning: no installed data next to this binary: reading %s/data, the source tree it "
        "was built from (install fa4sim, or set FA4SIM_DATA_DIR)\n",
        FA4SIM_SOURCE_DIR);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return parse_error(app, e, argc, argv);
  } catch (const Error& e) {
    return fail(e.what(), e.exit_code());
  } catch (const std::bad_alloc&) {
    return fail("out of memory (try fewer samples, threads or a smaller problem)", kExitUsage);
  } catch (const std::exception& e) {
    return fail(fmt::format("{} (this is a bug in fa4sim: please report it)", e.what()),
                kExitUsage);
  }
  return kExitOk;
}

// A table that could not be written (stdout on a full disk) is an error, not a silent exit 0.
int check_stdout(int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return code;
  fail(fmt::format("cannot write stdout: {} (check the disk or what stdout is redirected to)",
                   err ? std::strerror(err) : "a write failed"),
       fa4sim::kExitUsage);
  return code == fa4sim::kExitOk ? fa4sim::kExitUsage : code;
}

}  // namespace

int main(int argc, char** argv) { return check_stdout(run(argc, argv)); }
