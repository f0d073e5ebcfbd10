#pragma once

// The feed-forward branch of a block with the registered activation. src/model/feed_forward.cpp.

#include "lengen/core/export.h"
#include "lengen/model/activation.h"
#include "lengen/model/config.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>

namespace lengen {

/// Feed-forward `down(act(up(x)))` with the registered activation `model.activation`
/// (lengen/model/activation.h); a gated one reads gate and linear halves fused in up.weight
/// [2*d_ff, C] (gate rows first).
class LENGEN_API FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] -> [B, T, C]

 private:
  std::shared_ptr<Activation> act_;
  torch::nn::Linear up_{nullptr}, down_{nullptr};
};

TORCH_MODULE(FeedForward);

}  // namespace lengen
