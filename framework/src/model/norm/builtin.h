#pragma once
// The built-in norms' registration functions, called by norm_registry() (norm.cpp).
#include "lengen/model/norm.h"

namespace lengen {

void register_layernorm(NormRegistry& r);
void register_rmsnorm(NormRegistry& r);
void register_taotp_layernorm(NormRegistry& r);
void register_no_norm(NormRegistry& r);

}  // namespace lengen
