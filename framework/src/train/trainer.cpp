// The Trainer's step: batches, the backward pass, the optimizer, checkpoints (its loop:
// trainer_run.cpp).
#include "lengen/train/trainer.h"

#include "cuda_graph.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/rng.h"
#include "lengen/core/run_dir.h"
#include "lengen/core/torch_compat.h"
#include "lengen/core/version.h"
#include "lengen/model/architecture.h"
#include "lengen/train/checkpoint.h"
#include "lengen/train/tensorboard.h"
#include "lengen/train/weights.h"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <numeric>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen {

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

void request_stop() {
  g_stop.store(true);
}

bool stop_requested() {
  return g_stop.load();
}

void clear_stop() {
  g_stop.store(false);
}

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (p.grad().defined()) {
      grads.push_back(p.grad());
    }
  }
  if (grads.empty()) {
    return torch::zeros({});
  }
  auto total = torch::stack(torch::_foreach_norm(grads)).norm();  // one multi-tensor call
  if (max_norm > 0) {
    // Scaling by a clamped coefficient instead of testing `total > max_norm` on the host keeps
    // the step free of read-backs; a coefficient of exactly 1 leaves the gradients unchanged.
    // In float64, as the division was on the host before, so runs replay bit for bit.
    auto coef = torch::full({}, max_norm, total.options().dtype(torch::kFloat64))
                    .div_(total.to(torch::kFloat64) + 1e-6)
                    .clamp_max_(1.0);
    compat::foreach_mul_(grads, coef);
  }
  return total;
}

Trainer::Trainer(TrainConfig cfg,
                 uint64_t seed,
                 const Task& task,
                 Transformer model,
                 torch::Device device,
                 std::string run_dir)
    : cfg_(std::move(cfg)),
      seed_(seed),
      task_(task),
      model_(std::move(model)),
      device_(device),
      run_dir_(std::move(run_dir)),
      optimizer_(make_optimizer(
          optimizer_name(cfg_.optimizer), cfg_.optimizer_options, named_weights(model_))),
      schedule_(cfg_.schedule()),
      objective_(&model_->arch()),
      // Not owned: the caller keeps the task alive for the trainer's lifetime.
      data_(std::shared_ptr<const Task>(&task_, [](const Task*) {}), cfg_.dataset_size, seed_) {
  if (cfg_.pack) {
    LENGEN_CHECK(
        objective_->one_sequence(),
        "train.pack: packed rows need an architecture that reads one causal sequence a row "
        "(decoder); model.arch is '{}'; set train.pack: false (train.buckets also cuts "
        "padding, for every architecture)",
        objective_->name());
  }
  if (cfg_.cuda_graphs) {
    LENGEN_CHECK(objective_->one_sequence(),
                 "train.cuda_graphs: only an architecture that reads one causal sequence a row "
                 "(decoder) pads to a fixed shape without changing the loss; model.arch is '{}'",
                 objective_->name());
    LENGEN_CHECK(
        optimizer_->capturable(),
        "train.cuda_graphs: optimizer '{}' has no device-scalar step to record; use adam or "
        "adamw, or set cuda_graphs: false",
        optimizer_name(cfg_.optimizer));
    LENGEN_CHECK(!device_.is_cuda() || CudaGraph::supported(),
                 "train.cuda_graphs: this build of lengen has no CUDA graphs (it was configured "
                 "against a LibTorch without CUDA, or with LENGEN_CUDA_GRAPHS=OFF)");
  }
}

void Trainer::set_periodic(int64_t every,
                           std::function<void(int64_t)> fn,
                           std::function<void(int64_t)> started) {
  periodic_every_ = every;
  periodic_ = std::move(fn);
  started_ = std::move(started);
}

void Trainer::load_optimizer_state(const std::string& checkpoint) {
  TensorFile file = load_safetensors(checkpoint);
  optimizer_->load_state(file.tensors, training_step_of(file, checkpoint));
}

std::vector<Batch> Trainer::batches_for_step(int64_t step_index) {
  std::vector<Example> examples = data_.batch(step_index, cfg_.batch_size);
  // Position IDs are checked here, on the host, so that the step never reads them back from
  // a GPU (random offsets rely on it there).
  auto upload = [&](Batch b) {
    try {
      for (const auto& scheme : model_->schemes()) {
        for (const auto* ids : {&b.ids, &b.source_ids}) {
          if (ids->defined()) {
            scheme->check_ids(*ids);
          }
        }
      }
    } catch (const Error& e) {
      throw Error(fmt::format("training batch of step {}: {}", step_index, e.what()));
    }
    return b.to(device_);
  };
  std::vector<Batch> out;
  if (cfg_.pack) {
    out.push_back(upload(make_packed_batch(examples, task_.vocabulary().pad())));
    return out;
  }
  if (cfg_.buckets <= 1) {
    out.push_back(upload(objective_->make_batch(task_, examples)));
    return out;
  }
  std::vector<size_t> lengths;
  lengths.reserve(examples.size());
  for (const auto& e : examples) {
    lengths.push_back(e.tokens.size());
  }
  for (const auto& group : length_buckets(lengths, cfg_.buckets)) {
    std::vector<Example> part;
    part.reserve(group.size());
    for (size_t i : group) {
      part.push_back(std::move(examples[i]));
    }
    out.push_back(upload(objective_->make_batch(task_, part)));
  }
  return out;
}

torch::Tensor Trainer::backward(const std::vector<Batch>& batches) {
  model_->train();
  optimizer_->zero_grad();
  // The whole batch's loss is the sum of its scored tokens' losses over their count; each
  // group contributes its share, so its gradients add up to the whole batch's. The counts
  // come from the host (Batch::scored), so this loop never waits for the device.
  double scored = 0;
  std::vector<double> counts;
  for (const auto& b : batches) {
    counts.push_back(b.scored >= 0 ? static_cast<double>(b.scored) : b.mask.sum().item<double>());
    scored += counts.back();
  }
  torch::Tensor total;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (counts[i] == 0) {
      continue;
    }
    torch::Tensor logits;
    {
      compat::CudaAutocast autocast(bf16_autocast_ && device_.is_cuda());
      logits = objective_->scored_logits(model_, batches[i]);  // [B, T - first_scored, V]
    }
    auto loss = objective_->loss(logits, batches[i], cfg_.label_smoothing) * (counts[i] / scored);
    loss.backward();
    total = total.defined() ? total + loss.detach() : loss.detach();
  }
  return total.defined() ? total : torch::zeros({}, torch::TensorOptions().device(device_));
}

torch::Tensor Trainer::step(const std::vector<Batch>& batches, int64_t step_index) {
  if (cfg_.cuda_graphs) {
    LENGEN_CHECK(
        batches.size() == 1, "internal: train.cuda_graphs with {} length groups", batches.size());
    return graphed_step(batches[0], step_index);
  }
  // Dropout and scheme-side randomness (random offsets) draw from torch's generator, which
  // is re-seeded per step so that a resumed run replays exactly.
  torch::manual_seed(mix_seed(seed_, {static_cast<uint64_t>(step_index), 3}));
  torch::Tensor loss = backward(batches);
  {
    // Remember the first non-finite loss on the device; check_finite() reads it back.
    torch::NoGradGuard no_grad;
    const auto on = torch::TensorOptions().device(loss.device());
    if (!first_bad_step_.defined()) {
      first_bad_step_ = torch::full({}, -1, on.dtype(torch::kInt64));
      first_bad_loss_ = torch::zeros({}, on.dtype(torch::kFloat64));
    }
    auto first = torch::isfinite(loss).logical_not().logical_and(first_bad_step_.lt(0));
    first_bad_step_.masked_fill_(first, step_index);
    first_bad_loss_ = torch::where(first, loss.to(torch::kFloat64), first_bad_loss_);
  }
  if (cfg_.grad_clip > 0) {
    std::vector<torch::Tensor> params;
    for (auto& [n, p] : named_weights(model_)) {
      params.push_back(p);
    }
    clip_grad_norm(params, cfg_.grad_clip);
  }
  optimizer_->step(schedule_.at(step_index));
  return loss;
}

void Trainer::check_finite() const {
  if (!first_bad_step_.defined()) {
    return;
  }
  const int64_t bad = first_bad_step_.item<int64_t>();
  if (bad < 0) {
    return;
  }
  throw Error(
      fmt::format("training diverged: loss is {} at step {} (lr {:.3g}); the last "
                  "checkpoint is kept. Lower train.optimizer.lr, raise the warm-up or "
                  "set train.grad_clip",
                  first_bad_loss_.item<double>(),
                  bad,
                  schedule_.at(bad)));
}

std::string Trainer::latest_checkpoint() const {
  return RunDir(run_dir_).newest_checkpoint();
}

void Trainer::save_checkpoint(int64_t step) {
  const RunDir dir(run_dir_);
  auto tensors = named_weights(model_);
  for (auto& s : optimizer_->state()) {
    tensors.push_back(s);
  }
  std::map<std::string, std::string> meta{{"format", "lengen-checkpoint-1"},
                                          {"step", std::to_string(step)},
                                          {"seed", std::to_string(seed_)},
                                          {"torch", torch_version()}};
  save_safetensors(dir.checkpoint(step).string(), tensors, meta);
  // Keep the newest keep_checkpoints files.
  const std::vector<fs::path> all = dir.checkpoint_files();
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(cfg_.keep_checkpoints) < all.size(); ++i) {
    fs::remove(all[i], ec);
  }
}

int64_t Trainer::load_checkpoint(const std::string& path) {
  TensorFile file = load_safetensors(path);
  const int64_t step = training_step_of(file, path);
  load_weights(model_, file, path);
  optimizer_->load_state(file.tensors, step);
  return step;
}

}  // namespace lengen
