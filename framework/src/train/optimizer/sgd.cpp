// Stochastic gradient descent with heavy-ball or Nesterov momentum and L2 weight decay, as
// PyTorch's SGD computes it (no dampening).
#include "builtin.h"

namespace lengen {
namespace {

class Sgd final : public Optimizer {
 public:
  static ComponentSpec spec() {
    using O = OptionSpec;
    return {"optimizer",
            "sgd",
            "SGD with momentum (heavy ball or Nesterov) and L2 weight decay, as PyTorch's",
            {O::number("momentum", "0: plain SGD; else buf = momentum * buf + g")
                 .with_default(0.0)
                 .at_least(0)
                 .at_most(1),
             O::boolean("nesterov", "step along g + momentum * buf").with_default(false),
             O::number("weight_decay", "L2: weight_decay * w added to the gradient")
                 .with_default(0.0)
                 .at_least(0)}};
  }

  Sgd(const Options& o, const OptimizerContext& ctx)
      : Optimizer(ctx),
        momentum_(o.get_float("momentum")),
        nesterov_(o.get_bool("nesterov")),
        weight_decay_(o.get_float("weight_decay")) {
    if (nesterov_ && momentum_ == 0)
      o.fail("nesterov", "Nesterov momentum needs momentum > 0");
    if (momentum_ > 0)
      add_state("momentum_buffer");
  }

 protected:
  void update(Lists& l, double lr) override {
    auto grads = l.grads;
    if (weight_decay_ != 0)
      grads = torch::_foreach_add(grads, l.params, weight_decay_);
    if (momentum_ > 0) {
      auto& buf = l.state[0];  // zeros before the first step, so that step sets buf = g
      torch::_foreach_mul_(buf, momentum_);
      torch::_foreach_add_(buf, grads);
      if (nesterov_) {
        grads = torch::_foreach_add(grads, buf, momentum_);
      } else {
        grads = buf;
      }
    }
    torch::_foreach_add_(l.params, grads, -lr);
  }

 private:
  double momentum_;
  bool nesterov_;
  double weight_decay_;
};

}  // namespace

void register_sgd(OptimizerRegistry& r) {
  add_builtin_optimizer<Sgd>(r);
}

}  // namespace lengen
