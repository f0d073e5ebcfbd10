// TAOTP's LayerNorm (Figure 1.1): the population standard deviation with eps added to it,
// (x - mean) / (std + eps) * weight + bias.
#include "builtin.h"

namespace lengen {
namespace {

class TaotpLayerNorm final : public NormFunction {
 public:
  static ComponentSpec spec() {
    return {"norm",
            "taotp_layernorm",
            "TAOTP's LayerNorm (Figure 1.1): (x - mean) / (std + eps) * weight + bias, eps on the "
            "standard "
            "deviation (weight [C], bias [C])",
            {}};
  }

  TaotpLayerNorm(const Options&, const NormContext& ctx) : eps_(ctx.eps) {
    weight_ = ctx.holder->register_parameter("weight", torch::ones({ctx.dim}));
    bias_ = ctx.holder->register_parameter("bias", torch::zeros({ctx.dim}));
  }

  torch::Tensor forward(const torch::Tensor& x) override {
    auto centred = x - x.mean(-1, /*keepdim=*/true);              // [..., C]
    auto std = centred.pow(2).mean(-1, /*keepdim=*/true).sqrt();  // [..., 1]
    return centred / (std + eps_) * weight_ + bias_;              // [..., C]
  }

 private:
  double eps_;
  torch::Tensor weight_, bias_;
};

}  // namespace

void register_taotp_layernorm(NormRegistry& r) {
  add_builtin<TaotpLayerNorm>(r);
}

}  // namespace lengen
