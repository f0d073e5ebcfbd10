// The residual block: self-attention, cross-attention (encoder-decoder), feed-forward.
#include "lengen/model/block.h"

namespace lengen {

BlockImpl::BlockImpl(const ModelConfig& cfg, int64_t layer, AttentionKind self_kind, bool cross)
    : pre_(cfg.norm_position != "post"), post_(cfg.norm_position != "pre"), dropout_(cfg.dropout) {
  auto norm = [&] { return Norm(cfg.norm, cfg.d_model, cfg.norm_eps); };
  attn_ = register_module("attn", Attention(cfg, layer, self_kind));
  if (cross) {
    cross_ = register_module("cross", Attention(cfg, layer, AttentionKind::kCross));
  }
  if (cfg.d_ff > 0) {
    ff_ = register_module("ff", FeedForward(cfg));
  }
  if (pre_) {
    norm_attn_pre_ = register_module("norm_attn_pre", norm());
    if (cross_) {
      norm_cross_pre_ = register_module("norm_cross_pre", norm());
    }
    if (ff_) {
      norm_ff_pre_ = register_module("norm_ff_pre", norm());
    }
  }
  if (post_) {
    norm_attn_post_ = register_module("norm_attn_post", norm());
    if (cross_) {
      norm_cross_post_ = register_module("norm_cross_post", norm());
    }
    if (ff_) {
      norm_ff_post_ = register_module("norm_ff_post", norm());
    }
  }
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x_in,
                                 const AttentionInputs& self,
                                 const AttentionInputs& cross) {
  const double p = is_training() ? dropout_ : 0.0;
  auto residual = [&](torch::Tensor x, const torch::Tensor& branch, Norm& post) {
    x = x + (p > 0 ? torch::dropout(branch, p, true) : branch);  // [B, T, C]
    return post_ ? post(x) : x;
  };
  torch::Tensor x = x_in;  // [B, T, C]
  const int64_t r = self.rows_from;
  auto attended = attn_(pre_ ? norm_attn_pre_(x) : x, self);  // [B, T - r, C]
  if (r > 0) {
    x = x.narrow(1, r, x.size(1) - r);  // [B, T - r, C]: the rows whose outputs are wanted
  }
  x = residual(x, attended, norm_attn_post_);
  if (cross_) {
    AttentionInputs c = cross;
    std::vector<torch::Tensor> rows;
    if (r > 0 && c.query_ids) {
      for (const auto& ids : *c.query_ids) {
        rows.push_back(ids.defined() ? ids.narrow(-1, r, x.size(1)) : ids);  // [L', B|1, T - r]
      }
      c.query_ids = &rows;
      c.query_offset += r;
    }
    x = residual(x, cross_(pre_ ? norm_cross_pre_(x) : x, c), norm_cross_post_);
  }
  if (ff_) {
    x = residual(x, ff_(pre_ ? norm_ff_pre_(x) : x), norm_ff_post_);
  }
  return x;
}

}  // namespace lengen
