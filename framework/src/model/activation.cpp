// The activation registry with the built-in activations.
#include "lengen/model/activation.h"

#include "activation/builtin.h"

#include "lengen/registry/reference.h"

namespace lengen {

Activation::~Activation() = default;

ActivationRegistry& activation_registry() {
  static ActivationRegistry r("activation", "activations", "model.activation");
  static const bool registered = [] {
    register_relu(r);
    register_gelu(r);
    register_geglu(r);
    register_swiglu(r);
    return true;
  }();
  (void)registered;
  return r;
}

std::shared_ptr<Activation> make_activation(const std::string& name) {
  return create_referenced(activation_registry(), name, "model.activation", ActivationContext{});
}

}  // namespace lengen
