#pragma once

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/train/schedule.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace lengen {

/// The `train:` section of an experiment.
struct LENGEN_API TrainConfig {
  int64_t steps = 1000;
  int64_t batch_size = 64;
  int64_t buckets = 1;  ///< length groups per step (1: one padded batch)
  bool pack = false;    ///< several samples per row, block-diagonal attention
  /// `train.optimizer` as written: a registered optimizer's name or its map of options
  /// (lengen/train/optimizer.h); undefined for the default, adam.
  ConfigNode optimizer;
  /// The optimizer's options, validated once when the section is read (optimizer_options:
  /// the registered optimizer `optimizer` names, defaults filled in); adam's defaults on a
  /// default-constructed config.
  Options optimizer_options = default_optimizer_options();
  double lr = 1e-3;              ///< the optimizer's `lr`: the peak the schedule scales
  int64_t warmup_steps = 0;      ///< linear warm-up from 0 to lr
  std::string decay = "cosine";  ///< a registered decay after the warm-up (lengen/train/schedule.h)
  double min_lr_ratio = 0.0;     ///< final lr = lr * min_lr_ratio
  double grad_clip = 1.0;        ///< global L2 norm; 0 disables
  double label_smoothing = 0.0;  ///< target mass spread uniformly over the vocabulary
  int64_t dataset_size = 0;      ///< 0: fresh samples every step; N: fixed set of N examples
  int64_t log_every = 100;       ///< metrics.jsonl / progress line period
  int64_t checkpoint_every = 1000;     ///< 0: only the final checkpoint
  int64_t keep_checkpoints = 1;        ///< newest N kept
  int64_t eval_every = 0;              ///< evaluate the `eval_grid` every N steps (0: never)
  ConfigNode eval_grid;                ///< overrides of `eval:` for those evaluations (map)
  bool cuda_graphs = false;            ///< replay each padded shape's captured step (CUDA)
  int64_t graph_length_multiple = 16;  ///< with cuda_graphs: lengths padded up to a multiple

  /// adam's options, defaults filled in.
  static Options default_optimizer_options();
  /// The section's schema (validation and docs/config-reference.md).
  static ComponentSpec schema();
  /// Reads and validates `train:`; warmup may be given as warmup_steps or warmup_fraction.
  static TrainConfig from_config(const ConfigNode& node);
  YAML::Node to_yaml() const;

  /// The learning rate of every step: linear warm-up then the chosen decay.
  LearningRateSchedule schedule() const;
  /// schedule().at(step), for one step.
  double lr_at(int64_t step) const;
};

}  // namespace lengen
