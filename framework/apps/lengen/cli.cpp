#include "cli.h"

#include "lengen/core/error.h"
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

std::string config_of(const std::string& run_or_file) {
  if (fs::is_directory(run_or_file)) {
    std::string cfg = (fs::path(run_or_file) / "config.yaml").string();
    LENGEN_CHECK(fs::exists(cfg), "{}: not a run directory (no config.yaml)", run_or_file);
    return cfg;
  }
  return run_or_file;
}

// A run's config.yaml pins its evaluation grid (eval.grid, resolved from the task's range when the
// run started), so an override of the task's range alone (`--set task.eval_digits=[1,40]`) would
// leave the grid where it was, silently. Where an axis's stored grid is the whole of the task's
// old range and the overrides name no eval.grid, the grid follows the new range.
// Returns the eval.grid overrides that make it so (none: `after` stands as loaded).
std::vector<std::string> grid_follows_task(const std::string& config, const std::vector<std::string>& sets,
                                           const Experiment& after) {
  std::vector<std::string> out;
  if (sets.empty()) return out;
  for (const auto& s : sets) {
    if (s.rfind("eval.grid", 0) == 0 || s.rfind("eval=", 0) == 0) return out;
  }
  const Experiment before = Experiment::load(config);
  for (const auto& a : before.task->grid_axes()) {
    for (const auto& b : after.task->grid_axes()) {
      if (a.name != b.name || (a.lo == b.lo && a.hi == b.hi)) continue;
      std::vector<int64_t> whole;
      for (int64_t v = a.lo; v <= a.hi; ++v) whole.push_back(v);
      const auto it = before.eval.grid.find(a.name);
      if (it != before.eval.grid.end() && it->second == whole) {
        out.push_back(fmt::format("eval.grid.{}=[{},{}]", b.name, b.lo, b.hi));
      }
    }
  }
  return out;
}

LoadedRun load_run(const std::string& run, const std::vector<std::string>& sets) {
  LoadedRun r;
  r.dir = fs::is_directory(run) ? run : "";
  const std::string config = config_of(run);
  Experiment whole = Experiment::load(config, sets);
  if (!r.dir.empty()) {
    const std::vector<std::string> grid = grid_follows_task(config, sets, whole);
    if (!grid.empty()) {
      std::vector<std::string> all = sets;
      all.insert(all.end(), grid.begin(), grid.end());
      whole = Experiment::load(config, all);
    }
  }
  if (r.dir.empty()) {
    r.dir = whole.run_dir();
  }
  r.exp = final_experiment(whole);
  r.exp.dir = r.dir;  // schemes that read files of the run (ABC's bias) find them here
  configure_threads(r.exp.threads);
  r.device = r.exp.torch_device();
  r.model = r.exp.build_model(r.device);
  load_weights(r.model, final_checkpoint(r.dir));
  r.model->eval();
  return r;
}

GridCell parse_cell(const std::string& text, const char* option) {
  GridCell cell;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    std::string kv = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = kv.find('=');
    LENGEN_CHECK(eq != std::string::npos && eq + 1 < kv.size() &&
                     kv.find_first_not_of("0123456789", eq + 1) == std::string::npos,
                 "{} {}: expected axis=value[,axis=value], e.g. digits=12,operands=3", option, text);
    cell[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
    start = comma == std::string::npos ? text.size() : comma + 1;
  }
  return cell;
}

std::vector<int64_t> index_list(const std::string& text, int64_t n, const char* what) {
  std::vector<int64_t> out;
  if (text.empty()) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    LENGEN_CHECK(!item.empty() && *end == '\0' && v >= 0 && v < n, "--{} {}: '{}' is not in [0, {})", what, text,
                 item, n);
    out.push_back(v);
  }
  return out;
}

std::string self_exe() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).string();
}

}  // namespace lengen::cli
