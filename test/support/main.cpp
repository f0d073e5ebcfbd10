// Catch2 runner shared by every lengen test executable: points the plugin loader at the
// build tree's plugin folder, uses the machine's cores, and seeds torch's global generator
// from each test case's name, so that a test's random draws do not depend on which tests
// ran before it and a failure reproduces exactly.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.h"

#include "lengen/core/version.h"
#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"

#include <torch/utils.h>

#include <functional>
#include <string>

namespace {

using ListenerBase = Catch::TestEventListenerBase;  // Catch2 v3: EventListenerBase

struct SeedEachTestCase : ListenerBase {
  using ListenerBase::ListenerBase;

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    torch::manual_seed(static_cast<uint64_t>(std::hash<std::string>{}(info.name) & 0xffffffffu));
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SeedEachTestCase)

int main(int argc, char** argv) {
  lengen::use_native_blas_kernels(argv);
  lengen::set_build_plugin_dir(LENGEN_BUILD_PLUGIN_DIR);
  lengen::configure_threads(0);
  return Catch::Session().run(argc, argv);
}
