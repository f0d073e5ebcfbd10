// Normalisation: LayerNorm, RMSNorm, TAOTP's LayerNorm (eps on the standard deviation) or none
// (the identity, for hand-set constructions without normalisation).
#include "lengen/model/transformer.h"

namespace lengen {

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
    auto inv = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_);  // [..., 1]
    return x * inv * weight_;                                             // [..., C]
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
