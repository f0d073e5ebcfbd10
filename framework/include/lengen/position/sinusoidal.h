#pragma once

// Sinusoidal position tables (Vaswani et al. 2017).

#include "lengen/core/export.h"

#include <torch/types.h>

#include <cstdint>

namespace lengen {

/// Sinusoidal table [rows, dim]: row p = (sin(p w_0), cos(p w_0), sin(p w_1), ...),
/// w_i = base^(-2i/dim) (Vaswani et al. 2017: base 10000). Shared by the APE and coupling
/// plugins. A short table (tens of IDs) wants a small base: with 10000 most columns are
/// nearly constant over its rows and the few fast ones alias after about 2*pi rows.
LENGEN_API torch::Tensor sinusoidal_table(int64_t rows, int64_t dim, double base = 10000.0);

}  // namespace lengen
