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

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
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

struct Experiment;
struct StageSpec;
class Task;

/// What a stage component is built with (room for later fields without changing factories).
struct StageInfo {
  std::string name;  ///< the stage's `name:`
};

/// What a running stage may use: its resolved experiment, its folder, the models and folders
/// of the stages before it.
class LENGEN_API StageContext {
 public:
  /// The context of stage `index` of `stages` (the experiment's, or the implicit train and
  /// eval stages of an experiment without `stages:`, whose folder is RUN itself).
  StageContext(const std::vector<StageSpec>& stages, size_t index, std::string run_dir,
               bool resume, bool implicit = false);

  /// The experiment as this stage sees it (the file's sections with the stage's overrides).
  const Experiment& experiment() const;
  const Task& task() const;
  const StageSpec& spec() const;
  /// RUN, the run directory.
  const std::string& run_dir() const { return run_dir_; }
  /// RUN/stages/<name> (RUN itself for an experiment without `stages:`); created.
  const std::string& dir() const { return dir_; }
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
  std::string write_tensors(const std::string& file,
                            const std::vector<std::pair<std::string, torch::Tensor>>& tensors) const;

 private:
  const std::vector<StageSpec>& stages_;
  size_t index_;
  std::string run_dir_, dir_;
  bool resume_, implicit_;
};

/// A stage kind. `run` does the stage's work in ctx.dir(); it may throw Interrupted after
/// saving its state (a `--resume` calls it again).
class LENGEN_API Stage {
 public:
  virtual ~Stage();
  virtual void run(StageContext& ctx) = 0;

  /// What the framework asks of a kind (of the instance built when the file loads), instead
  /// of its name. A stage that trains leaves the weights later stages start from: by default
  /// it starts afresh (no init_from), it builds its own model and position sections, and a
  /// later stage may start only from its finished checkpoint. The last one is the run's model.
  virtual bool trains() const { return false; }
  /// Writes eval/ (grid.csv, summary.json): the last such stage's is copied to the run's own
  /// eval/ and plots/. Skipped by --no-eval.
  virtual bool evaluates() const { return false; }
  /// Reads other stages' evaluations (compare_stages): skipped by --no-eval too.
  virtual bool reads_evaluations() const { return false; }
};

/// One entry of `stages:`, validated when the experiment loads.
struct LENGEN_API StageSpec {
  /// The framework's keys of a stage entry (validation and docs/config-reference.md).
  static ComponentSpec schema();

  std::string name;
  std::string kind;                 ///< a registered stage component
  bool trains = false;              ///< the kind's Stage::trains()
  bool evaluates = false;           ///< the kind's Stage::evaluates()
  bool reads_evaluations = false;   ///< the kind's Stage::reads_evaluations()
  std::string init_from;            ///< "" | an earlier stage's name | a run directory
  bool init_from_stage = false;     ///< init_from names a stage of this experiment
  InitRules init;                   ///< new_parameters / dropped_parameters
  bool init_optimizer = false;      ///< also take Adam's state from init_from
  Options options;                  ///< the kind's own options
  ConfigNode node;                  ///< the entry, for messages
  std::shared_ptr<const Experiment> experiment;  ///< resolved for this stage
};

/// A compact stage entry that stands for several stages (`kind: self_improve` with
/// `rounds: N`). Its kind is registered like any stage kind (its spec validates the entry and
/// documents it; its Stage is never run), and this function, registered under the same kind,
/// returns the stage entries it stands for, which are then read like written ones.
struct StageExpansionContext {
  std::string previous;  ///< the name of the stage before the entry ("" when it comes first)
  uint64_t seed = 0;     ///< the experiment's seed (the entry's `seed:` where it gives one)
};
using StageExpansion = std::function<std::vector<YAML::Node>(const Options& options, const ConfigNode& entry,
                                                              const StageExpansionContext& context)>;
LENGEN_API void register_stage_expansion(const std::string& kind, StageExpansion expand);
/// The expansion registered for `kind`, or nullptr for a kind that is one stage.
LENGEN_API const StageExpansion* find_stage_expansion(const std::string& kind);

/// Options of `lengen run`.
struct RunOptions {
  bool resume = false;   ///< continue: finished stages are skipped, the current one resumes
  bool fresh = false;    ///< discard checkpoints, stages and evaluations first
  bool no_eval = false;  ///< skip evaluation (`eval` stages and the `compare_stages` reading them)
};

/// Runs an experiment in its run directory: writes config.yaml, then each stage in order
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
