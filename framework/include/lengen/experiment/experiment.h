#pragma once

#include "lengen/config/node.h"
#include "lengen/core/export.h"
#include "lengen/eval/evaluator.h"
#include "lengen/eval/paper.h"
#include "lengen/experiment/stage_spec.h"
#include "lengen/experiment/threads.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"
#include "lengen/train/data.h"
#include "lengen/train/trainer.h"

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace lengen {

struct BuiltSchemes;  // experiment.cpp

/// A validated experiment file: the one object the CLI builds from YAML. Each section is
/// validated by the component that owns it (ModelConfig, TrainConfig, EvalConfig, the task's
/// and schemes' own schemas); unknown top-level keys are errors.
///
///   name, seed, device (cpu|cuda|auto), dtype (float32|float64|bfloat16), output_dir,
///   threads (0 = hardware), plugins: [paths], task: {name, ..., mixture: [...]},
///   model: {...}, position: [{name, ...}, ...], train: {...}, eval: {...},
///   stages: [{name, kind, init_from, <task|model|position|train|eval overrides>, ...}],
///   paper: {cite, table, note, unit, values: {cell: accuracy}}  (report/paper.h)
struct LENGEN_API Experiment {
  std::string file;
  std::string name;
  uint64_t seed = 0;
  std::string device = "auto";
  std::string dtype = "float32";
  std::string output_dir = "runs";
  int64_t threads = 0;
  /// The run directory when it is not output_dir/<name>/<seed> (a run evaluated from its
  /// folder, which may have moved); "" otherwise.
  std::string dir;
  std::vector<std::string> plugins;
  ConfigNode task_node;
  std::vector<ConfigNode> position_nodes;
  ModelConfig model;
  TrainConfig train;
  EvalConfig eval;
  std::shared_ptr<Task> task;  ///< built during load (validates task options early)
  /// `task.mixture`: the training sources (empty: train on `task` itself).
  std::vector<DataSource> sources;
  ConfigNode mixture_node;  ///< `task.mixture` as written (recorded in config.yaml)
  /// `train.eval_every`'s evaluation: `eval:` with `train.eval_grid` applied.
  EvalConfig curve_eval;
  /// `stages:` (empty: the classic train-then-evaluate experiment).
  std::vector<StageSpec> stages;
  ConfigNode root;  ///< the file's tree after --set (stages resolve against it)
  /// `paper:`: the paper's figures per grid cell, printed beside the run's at its end.
  PaperReference paper;
  ConfigNode paper_node;  ///< `paper:` as written (recorded in config.yaml)
  /// The position schemes built when the file was read, from the model's own seed, on which
  /// the load-time checks ran: the first model built_model() builds with the same seed and
  /// context takes them instead of building them again. Shared by copies, taken once.
  std::shared_ptr<BuiltSchemes> built_schemes;

  /// Loads, applies `--set` overrides, loads listed plugins, validates every section, builds
  /// the task and checks that the evaluation grid is representable by the position schemes
  /// (e.g. no ID above max_position) before any training starts.
  static Experiment load(const std::string& path, const std::vector<std::string>& overrides = {});

  /// The same from a loaded tree; `path` names the file in messages and relative plugin
  /// paths. `allow_stages` is false for a stage's own experiment.
  /// The top level's schema (what from_node validates the file's keys against).
  static ComponentSpec schema();

  static Experiment from_node(const ConfigNode& root,
                              const std::string& path,
                              bool allow_stages = true);

  /// Reads `stages:` into `stages` (each stage's experiment resolved and validated).
  void parse_stages(const ConfigNode& stages);

  /// Where training batches come from: the mixture, or the task (online or train.dataset_size).
  /// `from_stage:` sources read their stage's labels from RUN/stages/<stage>/labels.jsonl,
  /// RUN being `run_dir` (default: run_dir()).
  TrainingData training_data(const std::string& run_dir = "") const;

  /// The labelled examples of a `from_stage:` source, its stages' labels.jsonl in order
  /// (RUN/stages/<stage>/, RUN being `run_dir`, default run_dir()); fails naming the file of a
  /// stage that has not run or kept nothing.
  std::vector<Example> stage_labels(const DataSource& source,
                                    const std::string& run_dir = "") const;

  /// Builds the model on `device`, initialised from a generator seeded by the experiment seed.
  /// Its position schemes are the ones built when the file was read (built_schemes) if no model
  /// has taken them yet and the seed and scheme context are unchanged, else built now from
  /// their YAML entries: the same parameters either way.
  Transformer build_model(const torch::Device& device) const;

  /// `dir` when set, else output_dir/<name>/<seed>.
  std::string run_dir() const;

  /// The resolved config (defaults filled in, plugin provenance added) as YAML text.
  std::string resolved_yaml() const;

  /// The device to use: "auto" picks CUDA when available.
  torch::Device torch_device() const;
  torch::Dtype torch_dtype() const;
  /// Whether training on `device` runs under bfloat16 autocast (dtype: bfloat16 on CUDA; on
  /// CPU a warning says float32 is used instead).
  bool bf16_autocast(const torch::Device& device) const;
};

/// An experiment file as one tree: with `extends: BASE` (relative to the file), BASE's keys
/// with the file's on top (maps merge key by key; lists and scalars replace; `paper:` and a
/// `task:` of another task replace whole; a key set to null removes the base's; `name` is not
/// inherited). Errors name the file that wrote the key.
LENGEN_API ConfigNode load_experiment_file(const std::string& path);

}  // namespace lengen
