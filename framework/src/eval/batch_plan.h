#pragma once

// The evaluator's batch plan (internal): examples sorted by length, cut by eval_batches.

#include "lengen/eval/teacher_forced.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

namespace lengen {

// The order that sorts examples by length (stable) and its batches (eval_batches, the token
// cap resolved by eval_batch_tokens).
struct BatchPlan {
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> batches;

  BatchPlan(const std::vector<Example>& examples,
            int64_t batch_size,
            int64_t batch_tokens,
            const torch::Device& device,
            Transformer& model)
      : order(examples.size()) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return examples[a].length() < examples[b].length();
    });
    std::vector<int64_t> lengths;
    lengths.reserve(examples.size());
    for (size_t i : order) {
      lengths.push_back(examples[i].length());
    }
    batches =
        eval_batches(lengths, batch_size, eval_batch_tokens(batch_tokens, device, model->config()));
  }

  // The examples of one batch, in its order.
  std::vector<Example> chunk(const std::vector<Example>& examples,
                             const std::pair<size_t, size_t>& batch) const {
    std::vector<Example> out;
    out.reserve(batch.second - batch.first);
    for (size_t i = batch.first; i < batch.second; ++i) {
      out.push_back(examples[order[i]]);
    }
    return out;
  }
};

}  // namespace lengen
