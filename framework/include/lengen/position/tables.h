#pragma once

// Learned position tables, one per level of IDs: the storage of learned APE, coupling and Abacus.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// One learned embedding table per position level, summed: the storage behind learned APE and
/// Position Coupling. Parameters "level<l>.weight" [max_position_l + 1, C].
class LENGEN_API PositionTables {
 public:
  PositionTables() = default;
  /// The initialisation options `init` (normal | sinusoidal, default `default_init`),
  /// `init_std`, `init_scale` and `init_base`.
  static std::vector<OptionSpec> init_options(const std::string& default_init);

  /// Registers one table per entry of `max_position` on `owner`, initialised as the
  /// init_options() in `o` say: N(0, init_std) or
  /// sinusoidal_table(rows, C, init_base) * init_scale.
  PositionTables(torch::nn::Module& owner,
                 const std::vector<int64_t>& max_position,
                 int64_t d_model,
                 const Options& o);

  /// ids [L, B, T] -> sum over levels of table_l[ids_l], [B, T, C].
  torch::Tensor embed(const torch::Tensor& ids) const;

  /// Fails naming the level, the largest ID and max_position when an ID is out of range.
  void check(const torch::Tensor& ids) const;

  /// Training-time random offsets (Cho et al.): per sample and level, adds
  /// delta ~ U[0, max_position_l - max ID of the sample at level l] to every non-zero ID.
  /// With `segments` ([B, T], packed rows: PositionScheme::segments()) a sample is a segment
  /// of a row, each with its own delta; without, a row.
  torch::Tensor random_offsets(const torch::Tensor& ids, const torch::Tensor& segments = {}) const;

  /// random_offsets for an encoder-decoder's source [L, B, S] and target [L, B, U]: one delta
  /// per sample and level, drawn over both sides together, added to both.
  std::pair<torch::Tensor, torch::Tensor> random_offsets_pair(const torch::Tensor& source,
                                                              const torch::Tensor& target) const;

  int64_t levels() const { return static_cast<int64_t>(tables_.size()); }

  /// Table l, [max_position_l + 1, C] (the parameter "level<l>").
  const torch::Tensor& weight(int64_t level) const {
    return tables_.at(static_cast<size_t>(level));
  }

  const std::vector<int64_t>& max_position() const { return max_position_; }

 private:
  std::vector<int64_t> max_position_;
  std::vector<torch::Tensor> tables_;
};

}  // namespace lengen
