#pragma once

#include "lengen/config/node.h"
#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"
#include "lengen/train/batch.h"

#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

class Objective;

/// The `train:` section of an experiment.
struct LENGEN_API TrainConfig {
  int64_t steps = 1000;
  int64_t batch_size = 64;
  std::string optimizer = "adam";  ///< adam | adamw
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;       ///< L2 for adam (coupled), decoupled for adamw
  int64_t warmup_steps = 0;        ///< linear warm-up from 0 to lr
  std::string decay = "cosine";    ///< cosine | linear | constant, after warm-up
  double min_lr_ratio = 0.0;       ///< final lr = lr * min_lr_ratio
  double grad_clip = 1.0;          ///< global L2 norm; 0 disables
  int64_t dataset_size = 0;        ///< 0: fresh samples every step; N: fixed set of N examples
  int64_t log_every = 100;         ///< metrics.jsonl / progress line period
  int64_t checkpoint_every = 1000; ///< 0: only the final checkpoint
  int64_t keep_checkpoints = 1;    ///< newest N kept

  /// Reads and validates `train:`; warmup may be given as warmup_steps or warmup_fraction.
  static TrainConfig from_config(const ConfigNode& node);
  YAML::Node to_yaml() const;

  /// Learning rate at (0-based) step: linear warm-up then the chosen decay.
  double lr_at(int64_t step) const;
};

/// Adam / AdamW with named state so it can be checkpointed next to the weights.
class LENGEN_API Optimizer {
 public:
  Optimizer(const TrainConfig& cfg, std::vector<std::pair<std::string, torch::Tensor>> params);
  /// One update with learning rate `lr` using the parameters' .grad().
  void step(double lr);
  void zero_grad();
  /// State tensors as "optimizer.exp_avg.<param>", "optimizer.exp_avg_sq.<param>".
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  /// Restores state written by state(); fails naming a missing or mis-shaped entry.
  void load_state(const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                  int64_t step);
  int64_t steps_taken() const { return t_; }

 private:
  TrainConfig cfg_;
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<torch::Tensor> m_, v_;
  int64_t t_ = 0;
};

/// Global L2 norm of all gradients; scales them down to `max_norm` if larger. Returns the
/// norm before clipping.
LENGEN_API double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

/// What a finished (or resumed) training run reports.
struct TrainResult {
  int64_t steps = 0;
  double final_loss = 0;
  double seconds = 0;
  double tokens_per_second = 0;
};

/// Runs training for one experiment in one run directory:
///   * step s draws its batch from an RNG seeded by (seed, s) and re-seeds torch's generator
///     with it, so a resumed run reproduces an uninterrupted one exactly;
///   * logs a progress line and a metrics.jsonl record every log_every steps;
///   * writes checkpoints/step-<N>.safetensors atomically (weights + optimizer state).
class LENGEN_API Trainer {
 public:
  Trainer(TrainConfig cfg,
          uint64_t seed,
          const Task& task,
          Transformer model,
          torch::Device device,
          std::string run_dir);

  /// Trains to cfg.steps, resuming from the newest checkpoint when `resume` is set.
  TrainResult run(bool resume);

  /// One optimisation step on a batch; returns the loss. Fails on a non-finite loss with the
  /// step number.
  double step(const Batch& batch, int64_t step_index);

  /// The training batch of step `step_index` (deterministic in seed and step).
  Batch batch_for_step(int64_t step_index);

  /// Runs forward passes under bfloat16 autocast (CUDA only; weights and optimizer stay
  /// float32). Set from the experiment's `dtype: bfloat16`.
  void set_bf16_autocast(bool on) { bf16_autocast_ = on; }

  /// Newest checkpoint in run_dir, or "" when none.
  std::string latest_checkpoint() const;
  void save_checkpoint(int64_t step);
  /// Loads weights and optimizer state; returns the step it was taken at.
  int64_t load_checkpoint(const std::string& path);

 private:
  TrainConfig cfg_;
  uint64_t seed_;
  const Task& task_;
  Transformer model_;
  torch::Device device_;
  std::string run_dir_;
  Optimizer optimizer_;
  std::shared_ptr<const Objective> objective_;  ///< from the model's architecture
  bool bf16_autocast_ = false;
  std::vector<Example> dataset_;  ///< fixed training set when dataset_size > 0
  std::vector<int64_t> perm_;     ///< visiting order of dataset_ in epoch perm_epoch_
  int64_t perm_epoch_ = -1;
};

/// Asks a running Trainer to write a checkpoint and stop after the current step. Safe to call
/// from a signal handler (SIGINT/SIGTERM); the CLI installs one.
LENGEN_API void request_stop();
LENGEN_API bool stop_requested();

/// Loads only the model weights from a checkpoint file (strict: every parameter must be
/// present with the right shape).
LENGEN_API void load_weights(Transformer& model, const std::string& path);

/// Model parameters by their documented names (see TransformerImpl).
LENGEN_API std::vector<std::pair<std::string, torch::Tensor>> named_weights(Transformer& model);

}  // namespace lengen
