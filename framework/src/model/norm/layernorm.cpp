// LayerNorm (Ba et al. 2016): (x - mean) / sqrt(var + eps) * weight + bias, LibTorch's kernel.
#include "builtin.h"

namespace lengen {
namespace {

class LayerNorm final : public NormFunction {
 public:
  static ComponentSpec spec() {
    return {"norm",
            "layernorm",
            "LayerNorm: (x - mean) / sqrt(var + eps) * weight + bias (weight [C], bias [C])",
            {}};
  }

  LayerNorm(const Options&, const NormContext& ctx) : eps_(ctx.eps) {
    weight_ = ctx.holder->register_parameter("weight", torch::ones({ctx.dim}));
    bias_ = ctx.holder->register_parameter("bias", torch::zeros({ctx.dim}));
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::layer_norm(x, {x.size(-1)}, weight_, bias_, eps_);  // [..., C]
  }

 private:
  double eps_;
  torch::Tensor weight_, bias_;
};

}  // namespace

void register_layernorm(NormRegistry& r) {
  add_builtin<LayerNorm>(r);
}

}  // namespace lengen
