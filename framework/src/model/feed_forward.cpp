// The feed-forward branch: down(act(up(x))) with the registered activation.
#include "lengen/model/feed_forward.h"

namespace lengen {

FeedForwardImpl::FeedForwardImpl(const ModelConfig& cfg) : act_(make_activation(cfg.activation)) {
  up_ = register_module(
      "up",
      torch::nn::Linear(
          torch::nn::LinearOptions(cfg.d_model, act_->inputs() * cfg.d_ff).bias(cfg.ff_bias)));
  down_ = register_module(
      "down", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_ff, cfg.d_model).bias(cfg.ff_bias)));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  return down_(act_->forward(up_(x)));  // [B, T, inputs * F] -> [B, T, F] -> [B, T, C]
}

}  // namespace lengen
