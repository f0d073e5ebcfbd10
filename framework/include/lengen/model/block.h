#pragma once

// One Transformer block: self-attention, cross-attention where the block has one, then the
// feed-forward, each a residual branch with its norms. src/model/block.cpp.

#include "lengen/core/export.h"
#include "lengen/model/attention.h"
#include "lengen/model/config.h"
#include "lengen/model/feed_forward.h"
#include "lengen/model/norm.h"
#include "lengen/position/scheme.h"

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace lengen {

/// One Transformer block with pre-, post- or pre+post normalisation (models.md §1.2):
/// self-attention (causal or bidirectional), cross-attention to an encoder output when the
/// block has one (encoder-decoder), then the feed-forward, each a residual branch.
class LENGEN_API BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, int64_t layer, AttentionKind self_kind, bool cross);
  /// x [B, T, C] -> [B, T, C]; `cross` is used only by a block with cross-attention. With
  /// self.rows_from = r > 0 only rows [r, T) are computed past the self-attention's keys:
  /// x [B, T, C] -> [B, T - r, C] (cross-attention then reads the query IDs of those rows).
  torch::Tensor forward(const torch::Tensor& x,
                        const AttentionInputs& self,
                        const AttentionInputs& cross = {});

 private:
  bool pre_, post_;
  double dropout_;
  Attention attn_{nullptr}, cross_{nullptr};
  FeedForward ff_{nullptr};
  Norm norm_attn_pre_{nullptr}, norm_attn_post_{nullptr};
  Norm norm_cross_pre_{nullptr}, norm_cross_post_{nullptr};
  Norm norm_ff_pre_{nullptr}, norm_ff_post_{nullptr};
};

TORCH_MODULE(Block);

}  // namespace lengen
