// Plugin loader: ABI handshake refusals, discovery, duplicate names.
#include "helpers.h"

#include "lengen/plugin/abi.h"
#include "lengen/plugin/loader.h"

#include <cstdio>
#include <filesystem>

using namespace lengen;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
std::string bad(const std::string& name) {
  return std::string(LENGEN_BINARY_DIR) + "/test_plugins/liblengen-bad-" + name + ".so";
}
}  // namespace

TEST_CASE("plugin loader: refusals", "[plugin]") {
  SECTION("ABI mismatch names both versions and how to fix it") {
    CHECK_THROWS_WITH(
        load_plugin(bad("abi_mismatch")),
        Contains(fmt::format("incompatible plugin ABI version (plugin: {}, lengen: {})",
                             LENGEN_PLUGIN_ABI + 41,
                             LENGEN_PLUGIN_ABI)) &&
            Contains("rebuild the plugin"));
    CHECK(position_registry().find("bad_abi") == nullptr);
  }
  SECTION("a library without the entry point") {
    CHECK_THROWS_WITH(load_plugin(bad("no_entry")),
                      Contains("not a lengen plugin (no lengen_plugin_v1 symbol)"));
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(load_plugin("/nonexistent/liblengen-position-x.so"),
                      Contains("no such file"));
  }
  SECTION("a file that is not a shared library") {
    test::TempDir dir;
    test::write_text(dir.file("liblengen-position-junk.so"), "not an ELF file");
    CHECK_THROWS_WITH(load_plugin(dir.file("liblengen-position-junk.so")),
                      Contains("cannot be loaded") && Contains("ldd"));
  }
}

TEST_CASE("plugin loader: discovery and provenance", "[plugin]") {
  std::vector<std::string> errors;
  load_all_plugins(&errors);
  CHECK(errors.empty());
  for (const char* name : {"nope", "ape", "sinusoidal", "coupling"}) {
    const auto* e = position_registry().find(name);
    REQUIRE(e != nullptr);
    CHECK(e->origin.library.find("liblengen-position-" + std::string(name)) != std::string::npos);
    CHECK(e->origin.version == "0.1.0");
  }
  REQUIRE(task_registry().find("addition") != nullptr);
  // Loading the same library again is a no-op.
  auto n = loaded_plugins().size();
  load_plugin(task_registry().find("addition")->origin.library);
  CHECK(loaded_plugins().size() == n);
}

TEST_CASE("plugin loader: the same name from two libraries is an error naming both", "[plugin]") {
  load_all_plugins();
  const std::string original = position_registry().find("nope")->origin.library;
  test::TempDir dir;
  const std::string copy = dir.file("liblengen-position-nope2.so");
  fs::copy_file(original, copy);
  CHECK_THROWS_WITH(load_plugin(copy),
                    Contains("registered twice") && Contains(original) && Contains("nope2.so"));
  // The original registration survives the failed load.
  CHECK(position_registry().find("nope")->origin.library == original);
}

TEST_CASE("build: translation units see the fmt lengen was configured with", "[build]") {
  // PyTorch's LibTorch bundles its own fmt headers; cmake/LengenTorch.cmake puts the fmt that
  // spdlog and lengen link against ahead of them. A mismatch here crashed PyTorch's LibTorch builds
  // once.
  std::string configured = LENGEN_FMT_VERSION_CONFIGURED;  // "9.1.0"
  int major = 0, minor = 0, patch = 0;
  REQUIRE(std::sscanf(configured.c_str(), "%d.%d.%d", &major, &minor, &patch) >= 2);
  CHECK(FMT_VERSION == major * 10000 + minor * 100 + patch);
  CHECK(fmt::format("{:>4}|{}", 7, std::string("x")) == "   7|x");
}
