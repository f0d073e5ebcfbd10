// SwiGLU (Shazeer 2020): silu(gate) * linear, the gate and the linear half from one fused
// up-projection (gate rows first).
#include "builtin.h"

namespace lengen {
namespace {

class Swiglu final : public GatedActivation {
 public:
  static ComponentSpec spec() {
    return {"activation",
            "swiglu",
            "SwiGLU (Shazeer 2020): silu(gate) * linear, two inputs per hidden unit",
            {}};
  }

  Swiglu(const Options&, const ActivationContext&) {}

 protected:
  torch::Tensor gate(const torch::Tensor& x) const override { return torch::silu(x); }
};

}  // namespace

void register_swiglu(ActivationRegistry& r) {
  add_builtin<Swiglu>(r);
}

}  // namespace lengen
