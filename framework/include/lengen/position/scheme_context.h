#pragma once

// What a position scheme is built with.

#include <cstdint>
#include <string>

namespace lengen {

/// Framework facts a scheme may need at construction (never the global config).
struct SchemeContext {
  int64_t d_model = 0;          ///< C
  int64_t heads = 0;            ///< H
  int64_t head_dim = 0;         ///< D
  int64_t layers = 0;           ///< number of layers in the stack
  int64_t position_levels = 1;  ///< L: levels of position IDs the task emits
  /// The run directory (RUN) the model belongs to, for schemes that read files a stage wrote
  /// (ABC's bias); "" when unknown (e.g. a model built in a test).
  std::string run_dir;
};

}  // namespace lengen
