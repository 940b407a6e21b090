// commands.h: the one subcommand table (ninja's kTools).
//
// Adding a command: write src/cli/cmd_NAME.cpp with `void add_NAME(CLI::App& root)` (it creates
// the subcommand, its options and a callback), declare it here and add one row to kCommands in
// commands.cpp, named as the subcommand: fa4sim builds only the command named first on its
// command line, found by that name (Note [One command built] in main.cpp). The sections of `fa4sim report` are a library layer:
// include/fa4sim/report/sections.h.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fa4sim/util/report.h"  // Report, Stopwatch, emit(): what every command uses

namespace fa4sim::cli {

struct CommandEntry {
  const char* name;
  void (*add)(CLI::App& root);
};

const std::vector<CommandEntry>& commands();

// ---- one line per command (defined in cmd_*.cpp)
void add_attention(CLI::App& root);
void add_check(CLI::App& root);
void add_exp2(CLI::App& root);
void add_fit(CLI::App& root);
void add_block(CLI::App& root);
void add_formats(CLI::App& root);
void add_gpu(CLI::App& root);
void add_gpu_attention(CLI::App& root);  // adds `attention` under `gpu`; called by add_gpu
void add_gpu_upstream(CLI::App& gpu);    // adds `upstream` under `gpu`; called by add_gpu
void add_quantize(CLI::App& root);
void add_report(CLI::App& root);
void add_rescale(CLI::App& root);
void add_roofline(CLI::App& root);
void add_schedule(CLI::App& root);
void add_version(CLI::App& root);

}  // namespace fa4sim::cli
