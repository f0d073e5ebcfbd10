// lengen: the command-line front end. A dispatcher over the commands in commands/*.cpp;
// every error ends here as one clean message and an exit status (75: interrupted, resumable).
#include "cli.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/core/version.h"
#include "lengen/plugin/abi.h"
#include "lengen/plugin/loader.h"
#include "lengen/train/trainer.h"

#include <csignal>

using namespace lengen;

namespace {
void on_signal(int) {
  request_stop();
}
}  // namespace

int main(int argc, char** argv) {
  use_native_blas_kernels(argv);  // may re-execute this program with OPENBLAS_CORETYPE set
  CLI::App app{fmt::format("lengen {}: length-generalization experiments on arithmetic", kVersion)};
  app.require_subcommand(1);
  cli::Common common;
  app.add_flag("--debug", common.debug, "verbose logging");
  app.set_version_flag("--version",
                       fmt::format("lengen {} (plugin API {}, ABI {}; LibTorch {})",
                                   kVersion,
                                   LENGEN_PLUGIN_API,
                                   LENGEN_PLUGIN_ABI,
                                   torch_version()));
  auto commands = cli::all_commands();
  std::vector<CLI::App*> subs;
  for (auto& c : commands)
    subs.push_back(c->add(app, common));

  CLI11_PARSE(app, argc, argv);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  try {
    set_log_level(common.debug ? "debug" : common.log_level);
    for (const auto& d : common.plugin_dirs)
      add_plugin_dir(d);
    for (size_t i = 0; i < commands.size(); ++i) {
      if (subs[i]->parsed())
        return commands[i]->run(common);
    }
  } catch (const Interrupted& e) {
    fmt::print(stderr, "lengen: {}\n", e.what());
    return kExitInterrupted;  // resumable, not failed (sweeps and Slurm tasks read this)
  } catch (const Error& e) {
    fmt::print(stderr, "lengen: error: {}\n", e.what());
    return 1;
  } catch (const c10::Error& e) {
    fmt::print(stderr,
               "lengen: LibTorch error: {}\n",
               common.debug ? e.what() : e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "lengen: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
