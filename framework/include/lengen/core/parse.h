#pragma once

// Reading numbers out of text that is not YAML (environment variables, grid-cell keys, scalars).
// src/core/parse.cpp.

#include "lengen/core/export.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace lengen {

/// A base-10 integer at the start of a text and how many characters it took.
struct LeadingInteger {
  int64_t value = 0;
  size_t used = 0;  ///< characters read, > 0
};

/// The integer `text` starts with, as std::stoll reads it (leading white space and a sign
/// allowed); nullopt where it starts with none or the integer does not fit in 64 bits.
LENGEN_API std::optional<LeadingInteger> leading_integer(const std::string& text);

}  // namespace lengen
