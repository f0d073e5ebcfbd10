#pragma once

// A learned table of position vectors, described by what indexes it.

#include <torch/types.h>

#include <cstdint>

namespace lengen {

/// A learned table of position vectors that a scheme adds to the token embedding, described by
/// what indexes it: code that sets weights by hand (TAOTP programs, the addition construction)
/// finds the tables it needs through this capability, never through a scheme's name.
struct LearnedPositionTable {
  torch::Tensor
      weight;  ///< [rows, C], one of the scheme's parameters: row p is added at position p
  bool sequence_index =
      false;          ///< indexed by the sequence index 0..T-1; else by `level` of the task's IDs
  int64_t level = 0;  ///< the level of the task's IDs (when !sequence_index)
};

}  // namespace lengen
