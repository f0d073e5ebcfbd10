// Adam (Kingma & Ba 2015) with L2 weight decay added to the gradient, and AdamW (Loshchilov &
// Hutter 2019) with the decay applied to the weights; both as PyTorch computes them.
#include "builtin.h"

#include "lengen/core/torch_compat.h"

#include <cmath>

namespace lengen {
namespace {

class Adam final : public Optimizer {
 public:
  static ComponentSpec spec(const std::string& name, bool decoupled) {
    using O = OptionSpec;
    return {"optimizer",
            name,
            decoupled
                ? "AdamW (Loshchilov & Hutter 2019): Adam with weight decay applied to the weights"
                : "Adam (Kingma & Ba 2015), weight decay as an L2 term added to the gradient",
            {O::number("beta1", "").with_default(0.9).at_least(0).at_most(1),
             O::number("beta2", "").with_default(0.999).at_least(0).at_most(1),
             O::number("eps", "").with_default(1e-8).at_least(0),
             O::number("weight_decay",
                       decoupled ? "decoupled: w -= lr * weight_decay * w"
                                 : "L2: weight_decay * w added to the gradient")
                 .with_default(0.0)
                 .at_least(0)}};
  }

  Adam(const Options& o, const OptimizerContext& ctx, bool decoupled)
      : Optimizer(ctx),
        beta1_(o.get_float("beta1")),
        beta2_(o.get_float("beta2")),
        eps_(o.get_float("eps")),
        weight_decay_(o.get_float("weight_decay")),
        decoupled_(decoupled) {
    add_state("exp_avg");
    add_state("exp_avg_sq");
  }

  bool capturable() const override { return true; }

 protected:
  void update(Lists& l, double lr) override {
    auto& m = l.state[0];
    auto& v = l.state[1];
    const auto t = static_cast<double>(steps_taken());
    // LibTorch 2.4 and later: one fused kernel for the whole update (the same formula).
    if (compat::fused_adam(l.params,
                           l.grads,
                           m,
                           v,
                           steps_taken(),
                           lr,
                           beta1_,
                           beta2_,
                           weight_decay_,
                           eps_,
                           decoupled_)) {
      return;
    }
    // One multi-tensor (foreach) call per update term for all parameters at once: on a GPU each
    // is a handful of kernels instead of one per parameter and term; on the CPU the same
    // per-tensor arithmetic in the same order, so results are unchanged bit for bit.
    const double bc1 = 1.0 - std::pow(beta1_, t);
    const double bc2 = 1.0 - std::pow(beta2_, t);
    auto grads = l.grads;
    if (weight_decay_ != 0) {
      if (decoupled_) {
        torch::_foreach_mul_(l.params, 1.0 - lr * weight_decay_);
      } else {
        grads = torch::_foreach_add(grads, l.params, weight_decay_);
      }
    }
    torch::_foreach_mul_(m, beta1_);
    torch::_foreach_add_(m, grads, 1.0 - beta1_);
    torch::_foreach_mul_(v, beta2_);
    torch::_foreach_addcmul_(v, grads, grads, 1.0 - beta2_);
    auto denom = torch::_foreach_sqrt(v);
    torch::_foreach_div_(denom, std::sqrt(bc2));
    torch::_foreach_add_(denom, eps_);
    torch::_foreach_addcdiv_(l.params, m, denom, -lr / bc1);
  }

  void update(Lists& l, const torch::Tensor& lr, const torch::Tensor& count) override {
    auto& m = l.state[0];
    auto& v = l.state[1];
    if (compat::fused_adam_on_device(
            l.params, l.grads, m, v, count, lr, beta1_, beta2_, weight_decay_, eps_, decoupled_)) {
      return;
    }
    // The same formula with the step's scalars as 0-dim tensors (one kernel chain per
    // parameter: this form is for the CPU and LibTorch before 2.4, where speed is not the point).
    const auto bc1 = 1.0 - torch::pow(beta1_, count);
    const auto bc2_sqrt = (1.0 - torch::pow(beta2_, count)).sqrt();
    const auto step_size = lr / bc1;
    const auto shrink = 1.0 - lr * weight_decay_;
    for (size_t i = 0; i < l.params.size(); ++i) {
      torch::Tensor g = l.grads[i];
      if (weight_decay_ != 0) {
        if (decoupled_) {
          l.params[i].mul_(shrink);
        } else {
          g = g + l.params[i] * weight_decay_;
        }
      }
      m[i].mul_(beta1_).add_(g, 1.0 - beta1_);
      v[i].mul_(beta2_).addcmul_(g, g, 1.0 - beta2_);
      const auto denom = (v[i].sqrt() / bc2_sqrt).add_(eps_);
      l.params[i].sub_(m[i] / denom * step_size);
    }
  }

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
};

}  // namespace

void register_adam(OptimizerRegistry& r) {
  for (bool decoupled : {false, true}) {
    const std::string name = decoupled ? "adamw" : "adam";
    r.add(with_learning_rate(Adam::spec(name, decoupled)),
          builtin_origin(),
          [decoupled](const Options& o, const OptimizerContext& c) -> std::shared_ptr<Optimizer> {
            return std::make_shared<Adam>(o, c, decoupled);
          });
  }
}

}  // namespace lengen
