// StageContext: what a running stage may use (lengen/stage/stage.h).
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/stage/run.h"
#include "lengen/stage/stage.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/weights.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

namespace {

int64_t checkpoint_step(const std::string& path) {
  return training_step_of(load_safetensors(path), path);
}

}  // namespace

StageContext::StageContext(const std::vector<StageSpec>& stages,
                           size_t index,
                           std::string run_dir,
                           bool resume,
                           bool implicit)
    : stages_(stages),
      index_(index),
      run_dir_(std::move(run_dir)),
      resume_(resume),
      implicit_(implicit) {
  LENGEN_CHECK(index_ < stages_.size(), "stage index {} out of range", index_);
  dir_ = implicit_ ? run_dir_ : RunDir(run_dir_).stage(stages_[index_].name).str();
  fs::create_directories(dir_);
}

const Experiment& StageContext::experiment() const {
  return *stages_[index_].experiment;
}

const std::string& StageContext::name() const {
  return spec().name;
}

const std::string& StageContext::file() const {
  return experiment().file;
}

uint64_t StageContext::seed() const {
  return experiment().seed;
}

uint64_t StageContext::eval_seed() const {
  return experiment().eval.seed;
}

const ModelConfig& StageContext::model_config() const {
  return experiment().model;
}

const std::string& StageContext::init_from() const {
  return spec().init_from;
}

void StageContext::fail(const std::string& message) const {
  spec().node.fail(message);
}

const std::string& StageContext::run_dir() const {
  return run_dir_;
}

const std::string& StageContext::dir() const {
  return dir_;
}

RunDir StageContext::folder() const {
  return RunDir(dir_);
}

bool StageContext::resume() const {
  return resume_;
}

Transformer StageContext::build_model(const torch::Device& device) const {
  return experiment().build_model(device);
}

const Task& StageContext::task() const {
  return *experiment().task;
}

const StageSpec& StageContext::spec() const {
  return stages_[index_];
}

torch::Device StageContext::device() const {
  return experiment().torch_device();
}

std::string StageContext::stage_dir(const std::string& name) const {
  for (size_t i = 0; i < index_; ++i) {
    if (stages_[i].name == name) {
      return implicit_ ? run_dir_ : RunDir(run_dir_).stage(name).str();
    }
  }
  throw Error(fmt::format(
      "stage '{}' asks for stage '{}', which does not run before it", spec().name, name));
}

const Experiment& StageContext::stage_experiment(const std::string& name) const {
  for (size_t i = 0; i < index_; ++i) {
    if (stages_[i].name == name)
      return *stages_[i].experiment;
  }
  throw Error(fmt::format(
      "stage '{}' asks for stage '{}', which does not run before it", spec().name, name));
}

std::string StageContext::init_checkpoint() const {
  return checkpoint_of(spec().init_from);
}

std::string StageContext::checkpoint_of(const std::string& from_in) const {
  // Follow init_from through stages that leave no weights (eval, analysis) to one that does.
  std::string from = from_in;
  for (;;) {
    if (from.empty())
      return "";
    size_t j = 0;
    while (j < index_ && stages_[j].name != from)
      ++j;
    if (j == index_) {
      if (!fs::is_directory(from)) {
        spec().node.fail(fmt::format("'{}' is neither an earlier stage nor a run directory", from));
      }
      return final_checkpoint(from);
    }
    const std::string ckpt = RunDir(stage_dir(stages_[j].name)).newest_checkpoint();
    if (!ckpt.empty()) {
      const int64_t step = checkpoint_step(ckpt);
      const int64_t want = stages_[j].experiment->train.steps;
      LENGEN_CHECK(
          !stages_[j].trains || step == want,
          "stage '{}' starts from stage '{}', whose newest checkpoint is step {} of {} (it has not "
          "finished)",
          spec().name,
          stages_[j].name,
          step,
          want);
      return ckpt;
    }
    LENGEN_CHECK(!stages_[j].trains,
                 "stage '{}' starts from stage '{}', which has no checkpoint yet",
                 spec().name,
                 stages_[j].name);
    from = stages_[j].init_from;
  }
}

Transformer StageContext::load_model_from(const std::string& from) const {
  bool is_stage = false;
  for (size_t j = 0; j < index_; ++j)
    is_stage = is_stage || stages_[j].name == from;
  Transformer model = (is_stage ? stage_experiment(from) : experiment()).build_model(device());
  const std::string ckpt = checkpoint_of(from);
  LENGEN_CHECK(!ckpt.empty(), "stage '{}': '{}' holds no model", spec().name, from);
  load_weights_by_name(model, ckpt, InitRules{});
  logger("stage")->info("{}: the model of {} ({})", spec().name, from, ckpt);
  return model;
}

Transformer StageContext::load_model() const {
  const Experiment& exp = experiment();
  Transformer model = exp.build_model(device());
  const std::string ckpt = init_checkpoint();
  if (!ckpt.empty()) {
    auto fresh = load_weights_by_name(model, ckpt, spec().init);
    logger("stage")->info(
        "{}: weights from {}{}",
        spec().name,
        ckpt,
        fresh.empty()
            ? ""
            : fmt::format(" ({} new parameters initialised fresh: {})", fresh.size(), join(fresh)));
  }
  return model;
}

std::string StageContext::write_tensors(
    const std::string& file,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors) const {
  const std::string path = (fs::path(dir_) / file).string();
  save_safetensors(path, tensors, {{"format", "lengen-stage-output-1"}, {"stage", spec().name}});
  return path;
}

}  // namespace lengen
