#pragma once

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <string>
#include <vector>

namespace lengen {

/// A plugin library that was loaded into this process.
struct LoadedPlugin {
  PluginOrigin origin;
  std::string kind_hint;  ///< "position"/"task" from the file name, "" when unconventional
  uint32_t abi_version = 0;
  uint32_t api_version = 0;
  std::string torch_version;  ///< "major.minor" the plugin was built against
};

/// Plugin search path, in precedence order (design note):
///   1. files from the YAML `plugins:` list (loaded explicitly with load_plugin)
///   2. --plugin-path DIR (add_plugin_dir)
///   3. LENGEN_PLUGIN_PATH (colon-separated)
///   4. the build tree's plugin folder (set by the test executables)
///   5. <exe_dir>/../lib/lengen/plugins (installed)
/// The current directory is never searched.
LENGEN_API void add_plugin_dir(const std::string& dir);
/// Sets the build-tree plugin folder (step 4); called by the test executables only: the CLI
/// finds its plugins through step 5, so an installed copy never reads the build tree.
LENGEN_API void set_build_plugin_dir(const std::string& dir);
LENGEN_API std::vector<std::string> plugin_search_path();

/// Loads one plugin library: checks the file, dlopen(RTLD_NOW|RTLD_LOCAL), finds
/// lengen_plugin_v1, checks ABI/API/torch/C++ ABI, registers its components (rolled back if
/// registration throws). Loading the same path twice is a no-op. Every failure throws
/// lengen::Error with the path and the reason.
LENGEN_API const LoadedPlugin& load_plugin(const std::string& path);

/// Loads every liblengen-*.so in the search path (for `lengen plugins`). Libraries that fail
/// to load are reported in `errors` rather than thrown.
LENGEN_API void load_all_plugins(std::vector<std::string>* errors = nullptr);

/// Every plugin loaded so far, in load order.
LENGEN_API std::vector<LoadedPlugin> loaded_plugins();

}  // namespace lengen
