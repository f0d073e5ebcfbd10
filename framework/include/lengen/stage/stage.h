#pragma once

// Stages: the steps of a multi-stage experiment (`stages:` in the YAML), run in order in one
// run directory. A stage kind is a plugin component like a position scheme or a task: a
// class with `static ComponentSpec spec()` (its own options, validated from the stage's
// entry) and a constructor `(const Options&, const StageInfo&)`, registered with
// `Registrar::add_stage<T>()`. Built in: `train` (also fine-tuning, with init_from) and
// `eval`.
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
#include "lengen/experiment/experiment.h"
#include "lengen/experiment/stage_spec.h"
#include "lengen/model/transformer.h"
#include "lengen/registry/registry.h"
#include "lengen/train/trainer.h"
#include "lengen/train/weights.h"

#include <torch/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

class Task;

/// What a running stage may use: its resolved experiment, its folder, the models and folders
/// of the stages before it.
class LENGEN_API StageContext {
 public:
  /// The context of stage `index` of `stages` (the experiment's, or the implicit train and
  /// eval stages of an experiment without `stages:`, whose folder is RUN itself).
  StageContext(const std::vector<StageSpec>& stages,
               size_t index,
               std::string run_dir,
               bool resume,
               bool implicit = false);

  /// The experiment as this stage sees it (the file's sections with the stage's overrides).
  const Experiment& experiment() const;
  const Task& task() const;
  const StageSpec& spec() const;

  /// RUN, the run directory.
  const std::string& run_dir() const { return run_dir_; }

  /// RUN/stages/<name> (RUN itself for an experiment without `stages:`); created.
  const std::string& dir() const { return dir_; }

  /// dir()'s layout: its checkpoints, evaluation, plots and the like (lengen/core/run_dir.h).
  RunDir folder() const { return RunDir(dir_); }

  bool resume() const { return resume_; }

  torch::Device device() const;

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
  /// An earlier stage's resolved experiment (its task and training data, its model config).
  const Experiment& stage_experiment(const std::string& name) const;

  /// Writes tensors as safetensors under dir() (atomically); returns the path.
  std::string write_tensors(
      const std::string& file,
      const std::vector<std::pair<std::string, torch::Tensor>>& tensors) const;

 private:
  const std::vector<StageSpec>& stages_;
  size_t index_;
  std::string run_dir_, dir_;
  bool resume_, implicit_;
};

/// Options of `lengen run`.
struct RunOptions {
  bool resume = false;   ///< continue: finished stages are skipped, the current one resumes
  bool fresh = false;    ///< discard checkpoints, stages and evaluations first
  bool no_eval = false;  ///< skip evaluation (`eval` stages and the `compare_stages` reading them)
  bool wait = false;  ///< another process holds the run directory: wait for it instead of refusing
};

/// Runs an experiment in its run directory, holding its lock (RUN/lengen.lock, core/lock.h) for
/// the whole run: a second process on the same directory refuses, naming the holder, or waits
/// (`options.wait`). Writes config.yaml, then each stage in order
/// (an experiment without `stages:` is one `train` stage then one `eval` stage, both in RUN
/// itself). A finished stage leaves RUN/stages/<name>/stage.json and is not run again; the
/// last evaluation is also copied to RUN/eval and RUN/plots.
LENGEN_API void run_experiment(const Experiment& exp, const RunOptions& options);

/// The checkpoint holding a run's final weights: for a staged run (RUN/config.yaml lists
/// stages) the newest checkpoint of the last stage that has any, else RUN/checkpoints'
/// newest. Fails when there is none.
LENGEN_API std::string final_checkpoint(const std::string& run_dir);

/// The experiment whose model the final checkpoint holds: the last `train` stage's (or `exp`
/// itself without stages), with the last `eval` stage's `eval:` section where there is one.
LENGEN_API Experiment final_experiment(const Experiment& exp);

}  // namespace lengen
