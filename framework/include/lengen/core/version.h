#pragma once

#include "lengen/core/export.h"

#include <string>

namespace lengen {

/// Version of the framework library (semantic; the minor version tracks the plugin API).
inline constexpr const char* kVersion = "0.1.0";

/// Human-readable description of the LibTorch this binary was built against, e.g. "1.13.1".
LENGEN_API std::string torch_version();

}  // namespace lengen
