#pragma once

// Stages: the steps of a multi-stage experiment (`stages:` in the YAML), run in order in one
// run directory. A stage kind is a plugin component like a position scheme or a task: a
// class with `static ComponentSpec spec()` (its own options, validated from the stage's
// entry) and a constructor `(const Options&, const StageInfo&)`, registered with
// `Registrar::add_stage<T>()` (lengen/experiment/stage_kind.h). Built in: `train` (also
// fine-tuning, with init_from) and `eval`.
//
//   class Calibrate : public lengen::Stage {
//    public:
//     static lengen::ComponentSpec spec();
//     Calibrate(const lengen::Options& o, const lengen::StageInfo&);
//     void run(lengen::StageContext& ctx) override {
//       lengen::Transformer model = ctx.load_model();            // init_from's weights
//       auto maps = lengen::mean_attention(model, ctx.task(), ...);  // analysis library
//       ctx.write_tensors("bias.safetensors", {...});           // atomically, in ctx.dir()
//     }
//   };

#include "lengen/core/export.h"
#include "lengen/core/run_dir.h"
#include "lengen/experiment/stage_kind.h"
#include "lengen/model/config.h"
#include "lengen/model/transformer.h"

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

class Task;
struct Experiment;
struct StageSpec;

/// What a running stage may use: its options' context (name, seed, model, task), its folder,
/// the models and folders of the stages before it. This is the plugin surface of a stage
/// (docs/writing-a-plugin.md, "What a plugin sees"): every member is defined in the library, so
/// the class's layout is the core's own and a change inside the core leaves a built stage
/// plugin working.
class LENGEN_API StageContext {
 public:
  /// The context of stage `index` of `stages` (the experiment's, or the implicit train and
  /// eval stages of an experiment without `stages:`, whose folder is RUN itself).
  StageContext(const std::vector<StageSpec>& stages,
               size_t index,
               std::string run_dir,
               bool resume,
               bool implicit = false);

  // --- The stage and its experiment -------------------------------------------------------

  /// The stage's `name:`.
  const std::string& name() const;
  /// The experiment file, for messages.
  const std::string& file() const;
  /// The experiment's seed, and its evaluation's (`eval.seed`).
  uint64_t seed() const;
  uint64_t eval_seed() const;
  /// The task and the model configuration as this stage sees them (the file's sections with
  /// the stage's overrides).
  const Task& task() const;
  const ModelConfig& model_config() const;
  /// `init_from` as written ("" when the stage starts from scratch).
  const std::string& init_from() const;
  /// Throws an error that names the file, line and stage entry: for a stage's own checks.
  [[noreturn]] void fail(const std::string& message) const;

  // --- Its folder ---------------------------------------------------------------------------

  /// RUN, the run directory.
  const std::string& run_dir() const;
  /// RUN/stages/<name> (RUN itself for an experiment without `stages:`); created.
  const std::string& dir() const;
  /// dir()'s layout: its checkpoints, evaluation, plots and the like (lengen/core/run_dir.h).
  RunDir folder() const;
  /// `lengen run --resume`: a stage that saved its state continues from it.
  bool resume() const;
  /// Writes tensors as safetensors under dir() (atomically); returns the path.
  std::string write_tensors(
      const std::string& file,
      const std::vector<std::pair<std::string, torch::Tensor>>& tensors) const;

  // --- Models -------------------------------------------------------------------------------

  torch::Device device() const;
  /// A model built from this stage's sections (seeded initialisation, no weights loaded).
  Transformer build_model(const torch::Device& device) const;
  /// A model built from this stage's experiment (seeded initialisation), with init_from's
  /// weights loaded under the stage's rules (new_parameters, dropped_parameters).
  Transformer load_model() const;
  /// The checkpoint init_from points at ("" when the stage starts from scratch).
  std::string init_checkpoint() const;
  /// The checkpoint of `from`, an earlier stage (followed through stages that leave no
  /// weights, as init_from is) or a run directory.
  std::string checkpoint_of(const std::string& from) const;
  /// The model of `from` (an earlier stage: built as that stage built it; a run directory:
  /// built as this stage's), its weights loaded strictly.
  Transformer load_model_from(const std::string& from) const;
  /// The folder of an earlier stage of this run (it must have finished).
  std::string stage_dir(const std::string& name) const;

  // --- The framework's own stages (not the plugin surface) ----------------------------------
  // Experiment and StageSpec are the core's internal types (lengen/experiment/experiment.h,
  // stage_spec.h): they change with the core, so a plugin that reads them is rebuilt with it.

  /// The experiment as this stage sees it.
  const Experiment& experiment() const;
  /// The stage's validated entry.
  const StageSpec& spec() const;
  /// An earlier stage's resolved experiment (its task and training data, its model config).
  const Experiment& stage_experiment(const std::string& name) const;

 private:
  const std::vector<StageSpec>& stages_;
  size_t index_;
  std::string run_dir_, dir_;
  bool resume_, implicit_;
};

}  // namespace lengen
