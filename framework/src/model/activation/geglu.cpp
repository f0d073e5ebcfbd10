// GEGLU (Shazeer 2020): gelu(gate) * linear, the gate and the linear half from one fused
// up-projection (gate rows first).
#include "builtin.h"

namespace lengen {
namespace {

class Geglu final : public Activation {
 public:
  static ComponentSpec spec() {
    return {"activation", "geglu", "GEGLU (Shazeer 2020): gelu(gate) * linear, two inputs per hidden unit", {}};
  }
  Geglu(const Options&, const ActivationContext&) {}
  int64_t inputs() const override { return 2; }
  torch::Tensor forward(const torch::Tensor& up) const override {
    auto parts = up.chunk(2, -1);            // gate [..., F], linear [..., F]
    return torch::gelu(parts[0]) * parts[1];  // [..., F]
  }
};

}  // namespace

void register_geglu(ActivationRegistry& r) { add_builtin<Geglu>(r); }

}  // namespace lengen
