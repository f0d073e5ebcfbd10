#pragma once

#include "lengen/core/export.h"
#include "lengen/task/example.h"

#include <torch/types.h>

#include <vector>

namespace lengen {

/// Examples padded into tensors for teacher forcing. With T = longest example length:
///   inputs   [B, T-1]     tokens[0 .. T-2] (pad id after the end)
///   targets  [B, T-1]     tokens[1 .. T-1]
///   mask     [B, T-1]     1.0 where targets[t] is a response token in the loss
///   ids      [L, B, T-1]  position IDs of the inputs (0 on padding)
/// Right padding is invisible to real tokens under a causal mask.
struct LENGEN_API Batch {
  torch::Tensor inputs, targets, mask, ids;
  int64_t tokens = 0;  ///< number of non-pad input tokens (for tokens/s)

  Batch to(const torch::Device& device) const;
};

/// Pads and stacks examples (all with the same number of ID levels).
LENGEN_API Batch make_batch(const std::vector<Example>& examples, int64_t pad_id);

}  // namespace lengen
