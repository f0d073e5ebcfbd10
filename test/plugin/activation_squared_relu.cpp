// An activation plugin for the tests (liblengen-activation-squared_relu.so in test_plugins/good/):
// squared ReLU (So et al. 2021, Primer), relu(x)^2, or relu(x)^power with the option `power`.
#include "lengen/model/activation.h"
#include "lengen/plugin/plugin.h"

namespace {

class SquaredRelu final : public lengen::Activation {
 public:
  static lengen::ComponentSpec spec() {
    using O = lengen::OptionSpec;
    return {"activation",
            "squared_relu",
            "squared ReLU (So et al. 2021): relu(x)^power",
            {O::number("power", "the exponent").with_default(2.0).at_least(1.0)}};
  }

  SquaredRelu(const lengen::Options& o, const lengen::ActivationContext&)
      : power_(o.get_float("power")) {}

  torch::Tensor forward(const torch::Tensor& up) const override {
    return torch::relu(up).pow(power_);
  }

 private:
  double power_;
};

void register_squared_relu(lengen::Registrar& r) {
  r.add_activation<SquaredRelu>();
}

}  // namespace

LENGEN_PLUGIN("squared_relu", "0.1.0", register_squared_relu)
