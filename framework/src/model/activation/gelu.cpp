// GELU (Hendrycks & Gimpel 2016): x * Phi(x), the exact (erf) form.
#include "builtin.h"

namespace lengen {
namespace {

class Gelu final : public Activation {
 public:
  static ComponentSpec spec() {
    return {"activation", "gelu", "GELU: x * Phi(x) (the erf form)", {}};
  }

  Gelu(const Options&, const ActivationContext&) {}

  torch::Tensor forward(const torch::Tensor& up) const override { return torch::gelu(up); }
};

}  // namespace

void register_gelu(ActivationRegistry& r) {
  add_builtin<Gelu>(r);
}

}  // namespace lengen
