#pragma once
// The built-in architectures' registration functions, called by architecture_registry()
// (architecture.cpp).
#include "lengen/model/architecture.h"
#include "lengen/model/causal_stack.h"

namespace lengen {

void register_decoder(ArchitectureRegistry& r);
void register_encoder(ArchitectureRegistry& r);
void register_encoder_decoder(ArchitectureRegistry& r);

}  // namespace lengen
