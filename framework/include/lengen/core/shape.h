#pragma once

// A tensor's shape as error messages spell it: "[2, 3, 4]".

#include <torch/types.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

namespace lengen {

inline std::string shape_text(const torch::Tensor& t) {
  return fmt::format("[{}]", fmt::join(t.sizes().begin(), t.sizes().end(), ", "));
}

}  // namespace lengen
