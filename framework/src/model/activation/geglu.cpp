// GEGLU (Shazeer 2020): gelu(gate) * linear, the gate and the linear half from one fused
// up-projection (gate rows first).
#include "builtin.h"

namespace lengen {
namespace {

class Geglu final : public GatedActivation {
 public:
  static ComponentSpec spec() {
    return {"activation",
            "geglu",
            "GEGLU (Shazeer 2020): gelu(gate) * linear, two inputs per hidden unit",
            {}};
  }

  Geglu(const Options&, const ActivationContext&) {}

 protected:
  torch::Tensor gate(const torch::Tensor& x) const override { return torch::gelu(x); }
};

}  // namespace

void register_geglu(ActivationRegistry& r) {
  add_builtin<Geglu>(r);
}

}  // namespace lengen
