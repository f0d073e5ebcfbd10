#pragma once

#include "lengen/core/export.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace lengen {

/// Named loggers ("lengen", "plugin", "train"), created on first use, writing to stderr.
LENGEN_API std::shared_ptr<spdlog::logger> logger(const char* name = "lengen");

/// Sets the level of every lengen logger ("debug", "info", "warn", "error").
LENGEN_API void set_log_level(const std::string& level);

}  // namespace lengen
