// RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight, with its gradient
// written out (or PyTorch's fused kernel on CUDA where the LibTorch has one).
#include "builtin.h"

#include "lengen/core/torch_compat.h"

#include <torch/autograd.h>

namespace lengen {
namespace {

// y = n * w, n = x * r, r = (mean(x^2) + eps)^-1/2.
// dL/dw = sum over rows of g * n; dL/dx = r * (g w - n * mean(g w * n)). 13 kernels forward
// and backward instead of the 20 autograd derives from the forward, for the same values
// (tested against autograd). Only first derivatives: nothing in lengen differentiates twice.
struct RmsNormFunction : torch::autograd::Function<RmsNormFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x,
                               const torch::Tensor& weight,
                               double eps) {
    auto inv = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);  // [..., 1]
    auto n = x * inv;                                                    // [..., C]
    ctx->save_for_backward({n, inv, weight});
    return n * weight;  // [..., C]
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &n = saved[0], &inv = saved[1], &weight = saved[2];
    const auto& g = grads[0];                                                            // [..., C]
    auto grad_w = (g * n).reshape({-1, n.size(-1)}).sum(0).to(weight.scalar_type());     // [C]
    auto gn = g * weight;                                                                // [..., C]
    auto grad_x = torch::addcmul(gn, n, (gn * n).mean(-1, /*keepdim=*/true), -1) * inv;  // [..., C]
    return {grad_x, grad_w, torch::Tensor()};
  }
};

class RmsNorm final : public NormFunction {
 public:
  static ComponentSpec spec() {
    return {"norm",
            "rmsnorm",
            "RMSNorm (Zhang & Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight (weight [C])",
            {}};
  }

  RmsNorm(const Options&, const NormContext& ctx) : eps_(ctx.eps) {
    weight_ = ctx.holder->register_parameter("weight", torch::ones({ctx.dim}));
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    auto fused = compat::fused_rms_norm(x, weight_, eps_);  // CUDA on recent LibTorch
    return fused.defined() ? fused : RmsNormFunction::apply(x, weight_, eps_);  // [..., C]
  }

 private:
  double eps_;
  torch::Tensor weight_;
};

}  // namespace

void register_rmsnorm(NormRegistry& r) {
  add_builtin<RmsNorm>(r);
}

}  // namespace lengen
