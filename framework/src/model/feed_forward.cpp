// The feed-forward branch: relu/gelu or gated geglu/swiglu.
#include "lengen/model/transformer.h"

namespace lengen {

FeedForwardImpl::FeedForwardImpl(const ModelConfig& cfg)
    : activation_(cfg.activation), gated_(cfg.activation == "geglu" || cfg.activation == "swiglu") {
  const int64_t up_width = gated_ ? 2 * cfg.d_ff : cfg.d_ff;
  up_ = register_module(
      "up", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_model, up_width).bias(cfg.ff_bias)));
  down_ = register_module(
      "down", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_ff, cfg.d_model).bias(cfg.ff_bias)));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = up_(x);  // [B, T, F] or [B, T, 2F]
  if (gated_) {
    auto parts = h.chunk(2, -1);  // gate [B, T, F], linear [B, T, F]
    auto gate = activation_ == "geglu" ? torch::gelu(parts[0]) : torch::silu(parts[0]);
    h = gate * parts[1];  // [B, T, F]
  } else {
    h = activation_ == "relu" ? torch::relu(h) : torch::gelu(h);
  }
  return down_(h);  // [B, T, C]
}

}  // namespace lengen
