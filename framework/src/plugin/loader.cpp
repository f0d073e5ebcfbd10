// Plugin loading: the search path, the ABI handshake, registration with rollback, and loading
// a component's library by the naming convention when a name is not registered.
#include "lengen/plugin/loader.h"

#include "lengen/core/log.h"
#include "lengen/plugin/abi.h"
#include "lengen/registry/registry.h"

#include <torch/version.h>

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen {

namespace {

struct LoaderState {
  std::recursive_mutex mutex;
  std::vector<std::string> dirs;  // --plugin-path, in order
  std::string build_dir;
  std::vector<LoadedPlugin> loaded;
};

LoaderState& state() {
  static LoaderState s;
  return s;
}

std::string exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.parent_path().string();
}

std::string kind_from_filename(const std::string& file) {
  for (const char* k :
       {"position", "task", "stage", "optimizer", "decay", "norm", "activation", "architecture"}) {
    if (file.rfind(fmt::format("liblengen-{}-", k), 0) == 0) {
      return k;
    }
  }
  return "";
}

}  // namespace

void add_plugin_dir(const std::string& dir) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().dirs.push_back(dir);
}

void set_build_plugin_dir(const std::string& dir) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().build_dir = dir;
}

std::vector<std::string> plugin_search_path() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  std::vector<std::string> out = state().dirs;
  if (const char* env = std::getenv("LENGEN_PLUGIN_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      std::string part =
          s.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!part.empty()) {
        out.push_back(part);
      }
      if (end == std::string::npos) {
        break;
      }
      start = end + 1;
    }
  }
  if (!state().build_dir.empty()) {
    out.push_back(state().build_dir);
  }
  std::string exe = exe_dir();
  if (!exe.empty()) {
    out.push_back(
        (fs::path(exe) / ".." / "lib" / "lengen" / "plugins").lexically_normal().string());
  }
  // Drop repeats (the build folder and <exe>/../lib/lengen/plugins coincide in a build tree).
  std::vector<std::string> unique;
  for (const auto& d : out) {
    std::error_code ec;
    std::string canon = fs::weakly_canonical(d, ec).string();
    std::string key = ec ? d : canon;
    if (std::find(unique.begin(), unique.end(), key) == unique.end()) {
      unique.push_back(key);
    }
  }
  return unique;
}

const LoadedPlugin& load_plugin(const std::string& path_in) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  std::error_code ec;
  fs::path path = fs::weakly_canonical(fs::path(path_in), ec);
  std::string p = ec ? path_in : path.string();
  for (const auto& lp : state().loaded) {
    if (lp.origin.library == p) {
      return lp;
    }
  }
  // 1. The file exists and is readable.
  if (!fs::exists(p)) {
    throw Error(fmt::format("plugin {}: no such file", p));
  }
  if (::access(p.c_str(), R_OK) != 0) {
    throw Error(fmt::format("plugin {}: file is not readable", p));
  }
  // 2. dlopen: NOW surfaces missing symbols here, LOCAL keeps plugins apart.
  void* handle = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    throw Error(
        fmt::format("plugin {}: cannot be loaded: {} (run `ldd {}`: a dependency may be "
                    "missing)",
                    p,
                    ::dlerror(),
                    p));
  }
  // 3. The entry point. (The handle is never closed: plugin code owns live objects.)
  auto entry =
      reinterpret_cast<lengen_plugin_entry_fn>(::dlsym(handle, LENGEN_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    throw Error(fmt::format(
        "plugin {}: not a lengen plugin (no {} symbol)", p, LENGEN_PLUGIN_ENTRY_SYMBOL));
  }
  const lengen_plugin_descriptor* d = entry();
  // 4. Handshake, before any C++ object crosses the boundary.
  const std::string rebuild =
      "rebuild the plugin against this lengen (find_package(lengen) from its install prefix)";
  if (!d || d->descriptor_size < sizeof(uint32_t) * 6) {
    throw Error(fmt::format("plugin {}: invalid descriptor; {}", p, rebuild));
  }
  if (d->abi_version != LENGEN_PLUGIN_ABI) {
    throw Error(
        fmt::format("plugin {}: incompatible plugin ABI version (plugin: {}, lengen: {}); {}",
                    p,
                    d->abi_version,
                    LENGEN_PLUGIN_ABI,
                    rebuild));
  }
  if (d->descriptor_size != sizeof(lengen_plugin_descriptor)) {
    throw Error(fmt::format("plugin {}: descriptor size {} differs from lengen's {}; {}",
                            p,
                            d->descriptor_size,
                            sizeof(lengen_plugin_descriptor),
                            rebuild));
  }
  if (d->api_version > LENGEN_PLUGIN_API) {
    throw Error(
        fmt::format("plugin {}: needs plugin API {} but this lengen provides {}; upgrade "
                    "lengen or {}",
                    p,
                    d->api_version,
                    LENGEN_PLUGIN_API,
                    rebuild));
  }
  if (d->torch_major != TORCH_VERSION_MAJOR || d->torch_minor != TORCH_VERSION_MINOR) {
    throw Error(fmt::format("plugin {}: built against LibTorch {}.{} but lengen uses {}.{}; {}",
                            p,
                            d->torch_major,
                            d->torch_minor,
                            TORCH_VERSION_MAJOR,
                            TORCH_VERSION_MINOR,
                            rebuild));
  }
  if (d->cxx11_abi != static_cast<uint32_t>(_GLIBCXX_USE_CXX11_ABI)) {
    throw Error(
        fmt::format("plugin {}: built with _GLIBCXX_USE_CXX11_ABI={} but lengen uses {}; {}",
                    p,
                    d->cxx11_abi,
                    _GLIBCXX_USE_CXX11_ABI,
                    rebuild));
  }
  // 5. Registration, rolled back on failure.
  LoadedPlugin lp;
  lp.origin = PluginOrigin{
      p, d->plugin_name ? d->plugin_name : "?", d->plugin_version ? d->plugin_version : "?"};
  lp.kind_hint = kind_from_filename(fs::path(p).filename().string());
  lp.abi_version = d->abi_version;
  lp.api_version = d->api_version;
  lp.torch_version = fmt::format("{}.{}", d->torch_major, d->torch_minor);
  Registrar registrar(lp.origin);
  try {
    d->register_components(registrar);
  } catch (const std::exception& e) {
    for (RegistryBase* r : all_registries())
      r->remove_library(p);
    throw Error(
        fmt::format("plugin '{}' ({}): registration failed: {}", lp.origin.plugin, p, e.what()));
  }
  // 6. Say what was loaded.
  logger("plugin")->debug("loaded plugin '{}' {} from {}", lp.origin.plugin, lp.origin.version, p);
  state().loaded.push_back(lp);
  return state().loaded.back();
}

bool resolve_by_convention(const std::string& kind, const std::string& name) {
  std::string file = fmt::format("liblengen-{}-{}.so", kind, name);
  for (const auto& dir : plugin_search_path()) {
    fs::path candidate = fs::path(dir) / file;
    std::error_code ec;
    if (fs::exists(candidate, ec)) {
      load_plugin(candidate.string());
      return true;
    }
  }
  return false;
}

void resolve_all() {
  std::vector<std::string> ignored;
  load_all_plugins(&ignored);
}

void load_all_plugins(std::vector<std::string>* errors) {
  std::vector<std::string> seen;
  for (const auto& dir : plugin_search_path()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string f = entry.path().filename().string();
      if (f.rfind("liblengen-", 0) == 0 && entry.path().extension() == ".so") {
        files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      // Earlier directories take precedence for the same file name.
      std::string fname = f.filename().string();
      if (std::find(seen.begin(), seen.end(), fname) != seen.end()) {
        continue;
      }
      seen.push_back(fname);
      try {
        load_plugin(f.string());
      } catch (const Error& e) {
        if (!errors) {
          throw;
        }
        errors->push_back(e.what());
      }
    }
  }
}

std::vector<LoadedPlugin> loaded_plugins() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().loaded;
}

}  // namespace lengen
