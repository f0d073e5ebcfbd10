// Normalisation: LayerNorm, RMSNorm, TAOTP's LayerNorm (eps on the standard deviation) or none
// (the identity, for hand-set constructions without normalisation).
#include "lengen/core/torch_compat.h"
#include "lengen/model/transformer.h"

namespace lengen {
namespace {

// RMSNorm with its gradient written out: y = n * w, n = x * r, r = (mean(x^2) + eps)^-1/2.
// dL/dw = sum over rows of g * n; dL/dx = r * (g w - n * mean(g w * n)). 13 kernels forward
// and backward instead of the 20 autograd derives from the forward, for the same values
// (tested against autograd). Only first derivatives: nothing in lengen differentiates twice.
struct RmsNormFunction : torch::autograd::Function<RmsNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, double eps) {
    auto inv = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);  // [..., 1]
    auto n = x * inv;                                                    // [..., C]
    ctx->save_for_backward({n, inv, weight});
    return n * weight;  // [..., C]
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &n = saved[0], &inv = saved[1], &weight = saved[2];
    const auto& g = grads[0];                                               // [..., C]
    auto grad_w = (g * n).reshape({-1, n.size(-1)}).sum(0).to(weight.scalar_type());  // [C]
    auto gn = g * weight;                                                   // [..., C]
    auto grad_x = torch::addcmul(gn, n, (gn * n).mean(-1, /*keepdim=*/true), -1) * inv;  // [..., C]
    return {grad_x, grad_w, torch::Tensor()};
  }
};

}  // namespace

NormImpl::NormImpl(const std::string& kind, int64_t dim, double eps)
    : rms_(kind == "rmsnorm"), eps_on_std_(kind == "taotp_layernorm"), eps_(eps) {
  if (kind == "none") {
    return;  // no parameters: forward is the identity
  }
  weight_ = register_parameter("weight", torch::ones({dim}));
  if (!rms_) {
    bias_ = register_parameter("bias", torch::zeros({dim}));
  }
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (!weight_.defined()) {
    return x;  // norm: none
  }
  if (rms_) {
    auto fused = compat::fused_rms_norm(x, weight_, eps_);  // CUDA on recent LibTorch
    return fused.defined() ? fused : RmsNormFunction::apply(x, weight_, eps_);  // [..., C]
  }
  if (eps_on_std_) {
    // TAOTP (Figure 1.1): population standard deviation, epsilon added to it.
    auto centred = x - x.mean(-1, /*keepdim=*/true);             // [..., C]
    auto std = centred.pow(2).mean(-1, /*keepdim=*/true).sqrt();  // [..., 1]
    return centred / (std + eps_) * weight_ + bias_;              // [..., C]
  }
  return torch::layer_norm(x, {x.size(-1)}, weight_, bias_, eps_);
}

}  // namespace lengen
