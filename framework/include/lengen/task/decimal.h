#pragma once

// Decimal-string helpers shared by the arithmetic task plugins (header-only). Numbers are
// strings of digits, most significant first, no sign.

#include "lengen/core/rng.h"

#include <cstdint>
#include <string>

namespace lengen::decimal {

/// "007" -> "7"; all zeros -> "0".
inline std::string strip_zeros(const std::string& x) {
  const size_t i = x.find_first_not_of('0');
  return i == std::string::npos ? "0" : x.substr(i);
}

/// Left-pads with zeros to n digits (longer numbers are returned unchanged).
inline std::string pad_left(const std::string& x, size_t n) {
  return x.size() >= n ? x : std::string(n - x.size(), '0') + x;
}

/// Uniform among numbers with exactly `digits` digits; 1 digit includes 0 (Cho et al. 2025).
inline std::string random_number(int64_t digits, Rng& rng) {
  std::string x;
  x.push_back(static_cast<char>('0' + rng.uniform_int(digits == 1 ? 0 : 1, 9)));
  for (int64_t i = 1; i < digits; ++i) {
    x.push_back(static_cast<char>('0' + rng.uniform_int(0, 9)));
  }
  return x;
}

}  // namespace lengen::decimal
