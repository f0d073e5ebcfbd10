#pragma once

// The lengen command line: a dispatcher (main.cpp) over one file per command
// (commands/*.cpp). A command adds its subcommand and options, then runs; every command
// builds what it needs from an experiment file or a run directory through the library and
// prints one clean message on error (main.cpp catches).

#include "lengen/experiment/experiment.h"
#include "lengen/model/transformer.h"
#include "lengen/stage/open_run.h"

#include <torch/types.h>

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace lengen::cli {

/// Options every command shares.
struct Common {
  std::vector<std::string> sets;
  std::vector<std::string> plugin_dirs;
  std::string log_level = "info";
  bool debug = false;
};

/// Adds --set (when `with_set`) and --plugin-path to a subcommand.
void add_common(CLI::App* app, Common& c, bool with_set = true);

class Command {
 public:
  virtual ~Command() = default;
  /// Adds the subcommand with its options to `app`; returns it.
  virtual CLI::App* add(CLI::App& app, Common& common) = 0;
  /// Runs the parsed subcommand; returns the exit status.
  virtual int run(const Common& common) = 0;
};

/// Every command, in `lengen --help` order.
std::vector<std::unique_ptr<Command>> all_commands();

// Helpers shared by the commands --------------------------------------------------------

/// The experiment of a run (its final stage's, for a staged run) with the final weights
/// (lengen/stage/open_run.h).
using LoadedRun = OpenRun;
LoadedRun load_run(const std::string& run, const std::vector<std::string>& sets);

/// "digits=12,operands=3" -> cell; `option` names the flag in errors.
GridCell parse_cell(const std::string& text, const char* option);

/// "0,2,3" -> indices, each in [0, n); "" -> all of them. `what` names the flag.
std::vector<int64_t> index_list(const std::string& text, int64_t n, const char* what);

/// The running executable (sweeps start it for each point).
std::string self_exe();

}  // namespace lengen::cli
