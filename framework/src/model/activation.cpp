// The activation registry with the built-in activations.
#include "lengen/model/activation.h"

#include "activation/builtin.h"

namespace lengen {

Activation::~Activation() = default;

ActivationRegistry& activation_registry() {
  static ActivationRegistry r = [] {
    ActivationRegistry reg("activation");
    register_relu(reg);
    register_gelu(reg);
    register_geglu(reg);
    register_swiglu(reg);
    return reg;
  }();
  return r;
}

std::shared_ptr<Activation> make_activation(const std::string& name) {
  return activation_registry().create(load_config_string(name, "model.activation"), ActivationContext{});
}

}  // namespace lengen
