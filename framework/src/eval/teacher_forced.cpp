// Teacher-forced exact match (equal to the greedy verdict) and the evaluator's batches.
#include "lengen/eval/teacher_forced.h"

#include "batch_plan.h"

#include "lengen/core/error.h"
#include "lengen/model/activation.h"
#include "lengen/model/architecture.h"

#include <algorithm>

namespace lengen {

std::vector<std::pair<size_t, size_t>> eval_batches(const std::vector<int64_t>& lengths,
                                                    int64_t max_sequences,
                                                    int64_t max_tokens) {
  LENGEN_CHECK(
      max_sequences >= 1, "eval_batches: max_sequences must be >= 1, got {}", max_sequences);
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    LENGEN_CHECK(i == 0 || lengths[i - 1] <= lengths[i], "eval_batches: lengths must be ascending");
    const auto count = static_cast<int64_t>(i + 1 - begin);
    const bool full =
        count > max_sequences || (max_tokens > 0 && count > 1 && count * lengths[i] > max_tokens);
    if (full) {
      out.emplace_back(begin, i);
      begin = i;
    }
  }
  if (begin < lengths.size()) {
    out.emplace_back(begin, lengths.size());
  }
  return out;
}

int64_t eval_batch_tokens(int64_t configured,
                          const torch::Device& device,
                          const ModelConfig& model) {
  if (configured > 0) {
    return configured;
  }
  if (!device.is_cpu()) {
    return kGpuEvalBatchTokens;
  }
  const int64_t ff_inputs = make_activation(model.activation)->inputs();
  const int64_t widest = std::max(
      {3 * model.heads * model.head_dim(), ff_inputs * model.d_ff, int64_t{256} * model.heads});
  return std::max<int64_t>(1, kCpuEvalBatchBytes / (4 * widest));
}

std::vector<FirstError> teacher_forced_first_errors(Transformer& model,
                                                    const Task& task,
                                                    const std::vector<Example>& examples,
                                                    const torch::Device& device,
                                                    int64_t batch_size,
                                                    int64_t batch_tokens) {
  torch::NoGradGuard no_grad;
  model->eval();
  const Architecture& objective = model->arch();
  std::vector<FirstError> out(examples.size());
  // Sorted by length so that a batch pads little.
  const BatchPlan plan(examples, batch_size, batch_tokens, device, model);
  const auto& order = plan.order;
  for (const auto& batch : plan.batches) {
    const auto [begin, end] = batch;
    std::vector<Example> chunk = plan.chunk(examples, batch);
    Batch b = objective.make_batch(task, chunk).to(device);
    // Only the positions from the first scored one on (no target before it is checked).
    const int64_t from = b.first_scored, rows = b.targets.size(1) - from;
    auto logits = objective.scored_logits(model, b);                                // [B, rows, V]
    auto targets = b.targets.narrow(1, from, rows);                                 // [B, rows]
    auto pred = logits.argmax(-1);                                                  // [B, rows]
    auto wrong = (pred != targets).logical_and(b.mask.narrow(1, from, rows) != 0);  // [B, rows]
    auto any = wrong.any(1);                                                        // [B]
    auto first = wrong.to(torch::kInt64).argmax(1);                    // [B] first true
    auto expected = targets.gather(1, first.unsqueeze(1)).squeeze(1);  // [B]
    auto predicted = pred.gather(1, first.unsqueeze(1)).squeeze(1);    // [B]
    auto cpu =
        torch::stack({any.to(torch::kInt64), first + from, expected, predicted}).to(torch::kCPU);
    auto acc = cpu.accessor<int64_t, 2>();  // [4, B]
    for (size_t i = begin; i < end; ++i) {
      const auto j = static_cast<int64_t>(i - begin);
      if (acc[0][j] != 0) {
        out[order[i]] = FirstError{acc[1][j], acc[2][j], acc[3][j]};
      }
    }
  }
  return out;
}

std::vector<bool> teacher_forced_exact_match(Transformer& model,
                                             const Task& task,
                                             const std::vector<Example>& examples,
                                             const torch::Device& device,
                                             int64_t batch_size,
                                             int64_t batch_tokens) {
  auto errors =
      teacher_forced_first_errors(model, task, examples, device, batch_size, batch_tokens);
  std::vector<bool> out(errors.size());
  for (size_t i = 0; i < errors.size(); ++i) {
    out[i] = errors[i].position < 0;
  }
  return out;
}

}  // namespace lengen
