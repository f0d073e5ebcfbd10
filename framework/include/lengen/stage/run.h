#pragma once

// Running an experiment's stages in its run folder (`lengen run`), and what a finished run
// holds: the framework's entry points, not the plugin surface (a stage plugin includes
// lengen/stage/stage.h).

#include "lengen/core/export.h"

#include <string>

namespace lengen {

struct Experiment;

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
