#include <cstdio>

#include "commands.h"
#include "fa4sim/util/version.h"

namespace fa4sim::cli {

void add_version(CLI::App& root) {
  auto* sub = root.add_subcommand("version", "Print the fa4sim version and git state");
  sub->callback([] { std::printf("fa4sim %s (%s)\n", version(), git_describe()); });
}

}  // namespace fa4sim::cli
