// A norm plugin for the tests (liblengen-norm-scalenorm.so in test_plugins/good/): ScaleNorm
// (Nguyen & Salazar 2019), g * x / max(||x||, eps), here with one learned gain per channel (as
// the model contract asks of every norm), started at the option `g0`. What a researcher's norm on
// the plugin path looks like; test_component_refs.cpp selects it from YAML by name and with
// options.
#include "lengen/model/norm.h"

#include "lengen/plugin/plugin.h"

namespace {

class ScaleNorm final : public lengen::NormFunction {
 public:
  static lengen::ComponentSpec spec() {
    using O = lengen::OptionSpec;
    return {"norm",
            "scalenorm",
            "ScaleNorm (Nguyen & Salazar 2019): g * x / max(||x||, eps), a learned g per channel",
            {O::number("g0", "the starting g").with_default(1.0).at_least(0.0)}};
  }

  ScaleNorm(const lengen::Options& o, const lengen::NormContext& ctx) : eps_(ctx.eps) {
    g_ = ctx.holder->register_parameter("g", torch::full({ctx.dim}, o.get_float("g0")));
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    return g_ * x / x.norm(2, -1, /*keepdim=*/true).clamp_min(eps_);  // [..., C]
  }

 private:
  double eps_;
  torch::Tensor g_;
};

void register_scalenorm(lengen::Registrar& r) {
  r.add_norm<ScaleNorm>();
}

}  // namespace

LENGEN_PLUGIN("scalenorm", "0.1.0", register_scalenorm)
