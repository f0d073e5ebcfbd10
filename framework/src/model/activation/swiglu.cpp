// SwiGLU (Shazeer 2020): silu(gate) * linear, the gate and the linear half from one fused
// up-projection (gate rows first).
#include "builtin.h"

namespace lengen {
namespace {

class Swiglu final : public Activation {
 public:
  static ComponentSpec spec() {
    return {"activation", "swiglu", "SwiGLU (Shazeer 2020): silu(gate) * linear, two inputs per hidden unit", {}};
  }
  Swiglu(const Options&, const ActivationContext&) {}
  int64_t inputs() const override { return 2; }
  torch::Tensor forward(const torch::Tensor& up) const override {
    auto parts = up.chunk(2, -1);            // gate [..., F], linear [..., F]
    return torch::silu(parts[0]) * parts[1];  // [..., F]
  }
};

}  // namespace

void register_swiglu(ActivationRegistry& r) { add_builtin<Swiglu>(r); }

}  // namespace lengen
