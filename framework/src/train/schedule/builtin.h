#pragma once
// The built-in decays' registration functions, one per file in this folder; called from
// schedule.cpp.
#include "lengen/train/schedule.h"

namespace lengen {

void register_cosine_decay(DecayRegistry& r);
void register_linear_decay(DecayRegistry& r);
void register_constant_decay(DecayRegistry& r);

}  // namespace lengen
