#pragma once
// The built-in activations' registration functions, called by activation_registry()
// (activation.cpp).
#include "lengen/model/activation.h"

namespace lengen {

void register_relu(ActivationRegistry& r);
void register_gelu(ActivationRegistry& r);
void register_geglu(ActivationRegistry& r);
void register_swiglu(ActivationRegistry& r);

/// A gated linear unit (Shazeer 2020): gate(first half) * second half of one fused
/// up-projection (gate rows first), two inputs per hidden unit. GEGLU and SwiGLU differ only in
/// gate().
class GatedActivation : public Activation {
 public:
  int64_t inputs() const final { return 2; }

  torch::Tensor forward(const torch::Tensor& up) const final {
    auto parts = up.chunk(2, -1);      // gate [..., F], linear [..., F]
    return gate(parts[0]) * parts[1];  // [..., F]
  }

 protected:
  virtual torch::Tensor gate(const torch::Tensor& x) const = 0;
};

}  // namespace lengen
