#pragma once

// Which positions an absolute scheme consumes (the sequence index or one level of the task's IDs).

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/position/learned_table.h"
#include "lengen/position/scheme_context.h"

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace lengen {

/// Which positions an absolute scheme consumes: the sequence index 0..T-1 (`ids: index`, the
/// usual APE) or one level of the task's IDs (`ids: task`, `level: l`). Shared by the APE and
/// sinusoidal plugins; declare options() in the scheme's spec.
class LENGEN_API PositionSource {
 public:
  /// The options `ids` (index | task) and `level`.
  static std::vector<OptionSpec> options();
  PositionSource() = default;
  /// Fails naming `level` when the task emits fewer levels.
  PositionSource(const Options& o, const SchemeContext& ctx);
  /// ids [L, B, T] -> [1, B, T] (ids: task) or [1, 1, T] (ids: index, the same for every
  /// sample); `offset` is the absolute index of column 0. With `sequence_index` ([B, T], packed
  /// rows) `ids: index` gives it, [1, B, T], instead.
  torch::Tensor select(const torch::Tensor& ids,
                       int64_t offset,
                       const torch::Tensor& sequence_index = {}) const;

  /// The table of `weight` over the positions this source selects.
  LearnedPositionTable table(const torch::Tensor& weight) const { return {weight, index_, level_}; }

 private:
  bool index_ = true;
  int64_t level_ = 0;
};

}  // namespace lengen
