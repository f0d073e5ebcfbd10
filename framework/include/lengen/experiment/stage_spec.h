#pragma once

// A validated entry of `stages:` (StageSpec) and the compact entries that stand for several
// stages (expansions): the framework's own view of a stage when an experiment loads. The
// interface a kind implements is lengen/experiment/stage_kind.h; running stages (StageContext,
// run_experiment) is the stage layer's: lengen/stage/stage.h, which a stage plugin includes.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/experiment/stage_kind.h"
#include "lengen/registry/registry.h"
#include "lengen/train/weights.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

struct Experiment;

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
