#pragma once

// What every fuzz target shares: the plugin folder of this build, one thread, a scratch folder
// of this process, and the rule that decides a finding: a reader may refuse its input only with
// lengen::Error (a clear message naming the file); any other exception, a crash, a sanitizer
// report, a hang or an allocation beyond the limit is a finding (libFuzzer stops on each).

#include "lengen/core/error.h"
#include "lengen/experiment/experiment.h"
#include "lengen/plugin/loader.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace lengen::fuzz {

/// This process's scratch folder (removed by the OS's tmp cleaning; small).
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("lengen-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// Writes `bytes` to scratch()/name and returns the path.
inline std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  const auto path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

inline std::string write_file(const std::string& name, const std::string& text) {
  return write_file(name, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

/// The `--set` overrides a fuzz input carries: its lines that begin "#set " (a comment to YAML).
inline std::vector<std::string> sets_of(const std::string& text) {
  std::vector<std::string> sets;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    if (line.rfind("#set ", 0) == 0)
      sets.push_back(line.substr(5));
  }
  return sets;
}

/// Once per process: plugins from this build, one thread.
inline void initialize() {
  set_build_plugin_dir(LENGEN_BUILD_PLUGIN_DIR);
  configure_threads(1);
}

/// A tiny experiment every target can build a model of.
inline constexpr const char* kTiny = R"(name: fuzz
seed: 0
task: {name: addition, train_digits: [1, 3], eval_digits: [1, 4]}
model: {layers: 1, heads: 2, d_model: 16, d_ff: 32}
position: [{name: coupling, max_position: 12}]
train: {steps: 10, batch_size: 4}
eval: {samples: 5}
)";

}  // namespace lengen::fuzz
