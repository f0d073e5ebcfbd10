// Catch2 runner shared by every lengen test executable: points the plugin loader at the
// build tree's plugin folder and uses the machine's cores.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"

int main(int argc, char** argv) {
  lengen::set_build_plugin_dir(LENGEN_BUILD_PLUGIN_DIR);
  lengen::configure_threads(0);
  return Catch::Session().run(argc, argv);
}
