#pragma once
// The built-in activations' registration functions, called by activation_registry()
// (activation.cpp).
#include "lengen/model/activation.h"

namespace lengen {

void register_relu(ActivationRegistry& r);
void register_gelu(ActivationRegistry& r);
void register_geglu(ActivationRegistry& r);
void register_swiglu(ActivationRegistry& r);

}  // namespace lengen
