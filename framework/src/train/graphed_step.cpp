// The Trainer's step as one CUDA graph per padded shape (train.cuda_graphs): capture, replay and
// the eager fallback; the rest of the Trainer is trainer.cpp.
#include "cuda_graph.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/model/architecture.h"
#include "lengen/position/memo.h"
#include "lengen/train/trainer.h"
#include "lengen/train/weights.h"

namespace lengen {

struct Trainer::GraphedStep {
  Batch batch;  // static inputs: each step's batch is copied into these tensors
  CudaGraph graph;
  torch::Tensor loss;  // static output, rewritten by every replay
  int64_t seen = 0;    // steps of this shape so far (the first runs eagerly, as a warm-up)
};

std::array<int64_t, 3> Trainer::graph_key(const Batch& b) const {
  const int64_t m = cfg_.graph_length_multiple, T = b.inputs.size(1);
  return {b.inputs.size(0), (T + m - 1) / m * m, b.first_scored / m * m};
}

bool Trainer::will_capture(const std::vector<Batch>& batches) const {
  if (!cfg_.cuda_graphs || !device_.is_cuda() || graphs_off_ || batches.size() != 1) {
    return false;
  }
  auto it = graphs_.find(graph_key(batches[0]));
  return it != graphs_.end() && it->second->seen >= 1 && !it->second->graph.captured();
}

torch::Tensor Trainer::graph_body(const Batch& batch) {
  torch::Tensor loss = backward({batch});
  {
    torch::NoGradGuard no_grad;
    auto first = torch::isfinite(loss).logical_not().logical_and(first_bad_step_.lt(0));
    first_bad_step_.copy_(torch::where(first, graph_step_, first_bad_step_));
    first_bad_loss_.copy_(torch::where(first, loss.to(torch::kFloat64), first_bad_loss_));
  }
  if (cfg_.grad_clip > 0) {
    std::vector<torch::Tensor> params;
    for (auto& [n, p] : named_weights(model_)) {
      params.push_back(p);
    }
    clip_grad_norm(params, cfg_.grad_clip);
  }
  optimizer_->step(graph_lr_, graph_count_);
  return loss;
}

torch::Tensor Trainer::graphed_step(const Batch& batch, int64_t step_index) {
  const auto on = torch::TensorOptions().device(device_);
  if (!first_bad_step_.defined()) {
    first_bad_step_ = torch::full({}, -1, on.dtype(torch::kInt64));
    first_bad_loss_ = torch::zeros({}, on.dtype(torch::kFloat64));
  }
  if (!graph_lr_.defined()) {
    // The fused CUDA update reads float32 scalars (the learning rate rounded to 7 digits);
    // elsewhere they are float64, so that the step equals the plain one to rounding.
    const auto scalar = on.dtype(device_.is_cuda() ? torch::kFloat32 : torch::kFloat64);
    graph_lr_ = torch::zeros({}, scalar);
    graph_count_ = torch::zeros({}, scalar);
    graph_step_ = torch::zeros({}, on.dtype(torch::kInt64));
  }
  // What changes from step to step goes into tensors the recorded work reads: three fills.
  graph_lr_.fill_(schedule_.at(step_index));
  graph_count_.fill_(static_cast<double>(optimizer_->steps_taken() + 1));
  graph_step_.fill_(step_index);
  torch::manual_seed(mix_seed(seed_, {static_cast<uint64_t>(step_index), 3}));

  const auto key = graph_key(batch);
  Batch padded = pad_sequence_batch(batch, key[1], key[2]);
  padded.scored = 1;  // a count the host never needs here (the loss divides on the device)
  auto& g = graphs_[key];
  if (!g) {
    g = std::make_shared<GraphedStep>();
  }
  const bool graphed = device_.is_cuda() && !graphs_off_ && g->seen++ >= 1;
  if (graphed) {
    // The recorded work reads these tensors: each step's batch is copied into them. Only the
    // graph ever reads them; an eager forward on memory rewritten in place could be handed a
    // remembered result for it (PositionMemo matches the same view of the same memory).
    if (!g->batch.inputs.defined()) {
      g->batch = padded;
      for (torch::Tensor* t :
           {&g->batch.inputs, &g->batch.targets, &g->batch.mask, &g->batch.ids}) {
        *t = t->clone();
      }
    } else {
      g->batch.inputs.copy_(padded.inputs, /*non_blocking=*/true);
      g->batch.targets.copy_(padded.targets, /*non_blocking=*/true);
      g->batch.mask.copy_(padded.mask, /*non_blocking=*/true);
      g->batch.ids.copy_(padded.ids, /*non_blocking=*/true);
    }
    if (!g->graph.captured()) {
      try {
        g->graph.capture([&] { g->loss = graph_body(g->batch); });
        logger("train")->info(
            "step {}: captured the training step as a CUDA graph for batches of "
            "{} x {} (scored from {}); {} shape(s) so far",
            step_index,
            key[0],
            key[1],
            key[2],
            graphs_.size());
      } catch (const Error& e) {
        logger("train")->warn(
            "step {}: {}; training without CUDA graphs from here on", step_index, e.what());
        graphs_off_ = true;
        optimizer_->zero_grad();
      }
    }
    if (g->graph.captured()) {
      g->graph.replay();
      optimizer_->advance();
      return g->loss.clone();
    }
  }
  // The first step of a shape (a warm-up before its capture), every step on the CPU, and every
  // step after a failed capture: the same padded step, eagerly, on the batch's own tensors.
  torch::Tensor loss = graph_body(padded);
  optimizer_->advance();
  return loss;
}

}  // namespace lengen
