// Sinusoidal position tables.
#include "lengen/position/sinusoidal.h"

#include "lengen/core/error.h"

namespace lengen {

torch::Tensor sinusoidal_table(int64_t rows, int64_t dim, double base) {
  LENGEN_CHECK(base > 1.0, "the sinusoidal base must be > 1, got {}", base);
  auto pos = torch::arange(rows, torch::kFloat64).unsqueeze(1);                  // [P, 1]
  auto i = torch::arange((dim + 1) / 2, torch::kFloat64);                        // [C/2]
  auto freq = torch::exp(-std::log(base) * 2.0 * i / static_cast<double>(dim));  // [C/2]
  auto angle = pos * freq.unsqueeze(0);                                          // [P, C/2]
  auto table =
      torch::stack({torch::sin(angle), torch::cos(angle)}, 2).reshape({rows, -1});  // [P, C']
  return table.slice(1, 0, dim).to(torch::kFloat32).contiguous();                   // [P, C]
}

}  // namespace lengen
