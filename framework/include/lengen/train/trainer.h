#pragma once

#include "lengen/core/export.h"
#include "lengen/model/batch.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"
#include "lengen/train/config.h"
#include "lengen/train/data.h"
#include "lengen/train/optimizer.h"
#include "lengen/train/schedule.h"

#include <torch/types.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// Global L2 norm of all gradients; scales them by min(1, max_norm / (norm + 1e-6)) as
/// PyTorch's clip_grad_norm_ does. Returns the norm before clipping as a 0-dim tensor on the
/// gradients' device: nothing is read back, so a GPU step does not wait here.
LENGEN_API torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

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

  /// One optimisation step on a batch given as length groups (batches_for_step); returns the
  /// loss as a 0-dim tensor on the device. The step never reads a value back from the device
  /// (no host synchronisation), so a GPU queues step after step. A non-finite loss is
  /// recorded on the device instead; check_finite() reports it.
  torch::Tensor step(const std::vector<Batch>& batches, int64_t step_index);

  /// Fails with "training diverged" naming the first step since construction whose loss was
  /// not finite. run() calls it before every progress line, evaluation and checkpoint, so
  /// no checkpoint is written from diverged weights. Reads one value back from the device.
  void check_finite() const;

  /// Zeroes the gradients, then accumulates those of the whole batch formed by `batches`:
  /// each group's mean loss weighted by its share of the scored tokens, so the result equals
  /// one padded batch of all their samples. Returns that loss (0-dim, on the device).
  torch::Tensor backward(const std::vector<Batch>& batches);

  /// The training batch of step `step_index` (deterministic in seed and step), as
  /// `train.buckets` length groups. Every scheme checks the batch's position IDs on the host
  /// before they go to the device (e.g. an ID above coupling's max_position fails here,
  /// naming the step), so the step itself need not read them back.
  std::vector<Batch> batches_for_step(int64_t step_index);

  /// Replaces where batches come from (default: the task, online or cfg.dataset_size).
  void set_data(TrainingData data) { data_ = std::move(data); }

  /// Called with the step count after every `every` steps, after the last step, and at step 0
  /// of a run that starts fresh (evaluation during training). `started` is called once with
  /// the step training starts from (0, or the resumed checkpoint's), before any step.
  void set_periodic(int64_t every,
                    std::function<void(int64_t step)> fn,
                    std::function<void(int64_t start)> started = {});

  /// Takes Adam's moments and step count from another run's checkpoint (fine-tuning with
  /// `init_optimizer: true`); fails naming a missing or mis-shaped entry.
  void load_optimizer_state(const std::string& checkpoint);

  /// Runs forward passes under bfloat16 autocast (CUDA only; weights and optimizer stay
  /// float32). Set from the experiment's `dtype: bfloat16`.
  void set_bf16_autocast(bool on) { bf16_autocast_ = on; }

  /// Newest checkpoint in run_dir, or "" when none.
  std::string latest_checkpoint() const;
  void save_checkpoint(int64_t step);
  /// Loads weights and optimizer state; returns the step it was taken at.
  int64_t load_checkpoint(const std::string& path);

 private:
  /// The step training starts from: the latest checkpoint's with `resume` (metrics.jsonl cut
  /// back to it), else 0 in a folder without checkpoints (an old metrics.jsonl removed).
  int64_t start_step(bool resume, const std::string& metrics_path);
  TrainConfig cfg_;
  uint64_t seed_;
  const Task& task_;
  Transformer model_;
  torch::Device device_;
  std::string run_dir_;
  std::shared_ptr<Optimizer> optimizer_;  ///< from cfg_.optimizer
  LearningRateSchedule schedule_;
  const Architecture* objective_;  ///< the model's architecture (model_ owns it)
  bool bf16_autocast_ = false;
  TrainingData data_;
  int64_t periodic_every_ = 0;
  std::function<void(int64_t)> periodic_;
  std::function<void(int64_t)> started_;
  // The first step with a non-finite loss (-1: none yet) and that loss, kept on the device.
  torch::Tensor first_bad_step_, first_bad_loss_;

  // train.cuda_graphs: one recorded step per padded shape (batch, length, first scored), the
  // learning rate, Adam's step count and the step index it reads, and whether a capture failed
  // (eager from then on).
  struct GraphedStep;
  std::map<std::array<int64_t, 3>, std::shared_ptr<GraphedStep>> graphs_;
  torch::Tensor graph_lr_, graph_count_, graph_step_;
  bool graphs_off_ = false;
  std::array<int64_t, 3> graph_key(const Batch& b) const;
  bool will_capture(const std::vector<Batch>& batches) const;
  torch::Tensor graph_body(const Batch& batch);
  torch::Tensor graphed_step(const Batch& batch, int64_t step_index);
};

/// Asks a running Trainer to write a checkpoint and stop after the current step. Safe to call
/// from a signal handler (SIGINT/SIGTERM); the CLI installs one.
LENGEN_API void request_stop();
LENGEN_API bool stop_requested();
/// Forgets a stop asked for earlier, so that a process that runs again (the Python package)
/// does not stop its next run at once.
LENGEN_API void clear_stop();

/// Keeps the JSON-lines records of a file whose "step" is <= `step` (a resumed run rewrites
/// what follows); a torn last line is dropped. Atomic.
LENGEN_API void truncate_jsonl(const std::string& path, int64_t step);

}  // namespace lengen
