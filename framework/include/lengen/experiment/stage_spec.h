#pragma once

// A stage kind as an experiment sees it when it loads: the interface a kind implements (Stage),
// what it is built with (StageInfo), a validated entry of `stages:` (StageSpec) and the compact
// entries that stand for several stages (expansions). Running stages (StageContext,
// run_experiment) is the stage layer's: lengen/stage/stage.h, which a stage plugin includes.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/registry/registry.h"
#include "lengen/train/weights.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

struct Experiment;
class StageContext;

/// What a stage component is built with (room for later fields without changing factories).
struct StageInfo {
  std::string name;  ///< the stage's `name:`
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

/// Stage kinds (`stages[i].kind`). The built-in kinds (the stage layer's) join it when the
/// library loads; a plugin's with Registrar::add_stage.
using StageRegistry = Registry<Stage, StageInfo>;
LENGEN_API StageRegistry& stage_registry();

inline StageRegistry& registry_of(const Stage*) {
  return stage_registry();
}

/// One entry of `stages:`, validated when the experiment loads.
struct LENGEN_API StageSpec {
  /// The framework's keys of a stage entry (validation and docs/config-reference.md).
  static ComponentSpec schema();

  std::string name;
  std::string kind;                              ///< a registered stage component
  bool trains = false;                           ///< the kind's Stage::trains()
  bool evaluates = false;                        ///< the kind's Stage::evaluates()
  bool reads_evaluations = false;                ///< the kind's Stage::reads_evaluations()
  std::string init_from;                         ///< "" | an earlier stage's name | a run directory
  bool init_from_stage = false;                  ///< init_from names a stage of this experiment
  InitRules init;                                ///< new_parameters / dropped_parameters
  bool init_optimizer = false;                   ///< also take Adam's state from init_from
  Options options;                               ///< the kind's own options
  std::shared_ptr<Stage> stage;                  ///< built once, when the file is read
  ConfigNode node;                               ///< the entry, for messages
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

using StageExpansion = std::function<std::vector<YAML::Node>(
    const Options& options, const ConfigNode& entry, const StageExpansionContext& context)>;
LENGEN_API void register_stage_expansion(const std::string& kind, StageExpansion expand);
/// The expansion registered for `kind`, or nullptr for a kind that is one stage.
LENGEN_API const StageExpansion* find_stage_expansion(const std::string& kind);

}  // namespace lengen
