#include "lengen/stage/open_run.h"

#include "lengen/core/error.h"
#include "lengen/core/run_dir.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"
#include "lengen/train/weights.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

namespace {

// A run's config.yaml pins its evaluation grid (eval.grid, resolved from the task's range when the
// run started), so an override of the task's range alone (`--set task.eval_digits=[1,40]`) would
// leave the grid where it was, silently. Where an axis's stored grid is the whole of the task's
// old range and the overrides name no eval.grid, the grid follows the new range.
// Returns the eval.grid overrides that make it so (none: `after` stands as loaded).
std::vector<std::string> grid_follows_task(const std::string& config,
                                           const std::vector<std::string>& sets,
                                           const Experiment& after) {
  std::vector<std::string> out;
  if (sets.empty())
    return out;
  for (const auto& s : sets) {
    if (s.rfind("eval.grid", 0) == 0 || s.rfind("eval=", 0) == 0)
      return out;
  }
  const Experiment before = Experiment::load(config);
  for (const auto& a : before.task->grid_axes()) {
    for (const auto& b : after.task->grid_axes()) {
      if (a.name != b.name || (a.lo == b.lo && a.hi == b.hi))
        continue;
      std::vector<int64_t> whole;
      for (int64_t v = a.lo; v <= a.hi; ++v)
        whole.push_back(v);
      const auto it = before.eval.grid.find(a.name);
      if (it != before.eval.grid.end() && it->second == whole) {
        out.push_back(fmt::format("eval.grid.{}=[{},{}]", b.name, b.lo, b.hi));
      }
    }
  }
  return out;
}

// The stage `name` of `whole`, and the checkpoint of the model it trained or used.
std::pair<Experiment, std::string> stage_model(const Experiment& whole,
                                               const RunDir& run,
                                               const std::string& name) {
  std::vector<std::string> names;
  for (const auto& st : whole.stages)
    names.push_back(st.name);
  auto find = [&](const std::string& n) -> const StageSpec* {
    for (const auto& st : whole.stages) {
      if (st.name == n)
        return &st;
    }
    return nullptr;
  };
  const StageSpec* st = find(name);
  LENGEN_CHECK(st != nullptr,
               "{}: no stage '{}'{}{}",
               run.str(),
               name,
               did_you_mean(name, names),
               names.empty() ? " (the run has no stages:)" : "; its stages: " + join(names));
  // A stage that wrote no weights used its init_from's model.
  const StageSpec* at = st;
  std::string ckpt = run.stage(at->name).newest_checkpoint();
  while (ckpt.empty() && at->init_from_stage) {
    at = find(at->init_from);
    if (at == nullptr)
      break;
    ckpt = run.stage(at->name).newest_checkpoint();
  }
  if (ckpt.empty() && at != nullptr && !at->init_from_stage && !at->init_from.empty()) {
    ckpt = final_checkpoint(at->init_from);  // the chain started from another run directory
  }
  LENGEN_CHECK(
      !ckpt.empty(), "{}: stage '{}' has no weights yet (it has not run?)", run.str(), name);
  return {Experiment(*st->experiment), ckpt};
}

}  // namespace

std::string config_of(const std::string& run_or_file) {
  if (fs::is_directory(run_or_file)) {
    std::string cfg = RunDir(run_or_file).config().string();
    LENGEN_CHECK(fs::exists(cfg), "{}: not a run directory (no config.yaml)", run_or_file);
    return cfg;
  }
  return run_or_file;
}

OpenRun open_run(const std::string& run,
                 const std::vector<std::string>& sets,
                 const std::string& stage,
                 const std::string& device) {
  OpenRun r;
  r.dir = fs::is_directory(run) ? run : "";
  const std::string config = config_of(run);
  std::vector<std::string> all = sets;
  if (!device.empty())
    all.push_back("device=" + device);
  r.whole = Experiment::load(config, all);
  if (!r.dir.empty()) {
    const std::vector<std::string> grid = grid_follows_task(config, sets, r.whole);
    if (!grid.empty()) {
      all.insert(all.end(), grid.begin(), grid.end());
      r.whole = Experiment::load(config, all);
    }
  } else {
    r.dir = r.whole.run_dir();
  }
  if (stage.empty()) {
    r.exp = final_experiment(r.whole);
    r.checkpoint = final_checkpoint(r.dir);
  } else {
    std::tie(r.exp, r.checkpoint) = stage_model(r.whole, RunDir(r.dir), stage);
    r.stage = stage;
  }
  r.exp.dir = r.dir;  // schemes that read files of the run (ABC's bias) find them here
  configure_threads(r.exp.threads);
  r.device = r.exp.torch_device();
  r.model = r.exp.build_model(r.device);
  load_weights(r.model, r.checkpoint);
  r.model->eval();
  return r;
}

}  // namespace lengen
