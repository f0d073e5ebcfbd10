// ReLU: max(0, x).
#include "builtin.h"

namespace lengen {
namespace {

class Relu final : public Activation {
 public:
  static ComponentSpec spec() { return {"activation", "relu", "ReLU: max(0, x)", {}}; }

  Relu(const Options&, const ActivationContext&) {}

  torch::Tensor forward(const torch::Tensor& up) const override { return torch::relu(up); }
};

}  // namespace

void register_relu(ActivationRegistry& r) {
  add_builtin<Relu>(r);
}

}  // namespace lengen
