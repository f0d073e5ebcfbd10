#pragma once

// The interface a stage kind implements (Stage), what it is built with (StageInfo) and the
// registry of kinds: part of the plugin surface (docs/writing-a-plugin.md), which a stage
// plugin reaches through lengen/stage/stage.h.

#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <string>

namespace lengen {

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

}  // namespace lengen
