#include "cli.h"

#include "lengen/core/error.h"
#include "lengen/core/run_dir.h"
#include "lengen/stage/stage.h"
#include "lengen/train/trainer.h"
#include "lengen/train/weights.h"

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen::cli {

void add_common(CLI::App* app, Common& c, bool with_set) {
  if (with_set) {
    app->add_option("--set", c.sets, "override a config key: --set train.steps=100 (repeatable)");
  }
  app->add_option("--plugin-path", c.plugin_dirs, "extra plugin folder (repeatable)");
}

LoadedRun load_run(const std::string& run, const std::vector<std::string>& sets) {
  return open_run(run, sets);
}

GridCell parse_cell(const std::string& text, const char* option) {
  GridCell cell;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string kv =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = kv.find('=');
    LENGEN_CHECK(eq != std::string::npos && eq + 1 < kv.size() &&
                     kv.find_first_not_of("0123456789", eq + 1) == std::string::npos,
                 "{} {}: expected axis=value[,axis=value], e.g. digits=12,operands=3",
                 option,
                 text);
    cell[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    start = comma == std::string::npos ? text.size() : comma + 1;
  }
  return cell;
}

std::vector<int64_t> index_list(const std::string& text, int64_t n, const char* what) {
  std::vector<int64_t> out;
  if (text.empty()) {
    for (int64_t i = 0; i < n; ++i)
      out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    LENGEN_CHECK(!item.empty() && *end == '\0' && v >= 0 && v < n,
                 "--{} {}: '{}' is not in [0, {})",
                 what,
                 text,
                 item,
                 n);
    out.push_back(v);
  }
  return out;
}

std::string self_exe() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).string();
}

}  // namespace lengen::cli
