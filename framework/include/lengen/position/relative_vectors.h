#pragma once

// Learned relative-position vectors over clipped distances (Shaw et al. 2018): RPE_k's storage.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/position/attention_context.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme_context.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace lengen {

/// Learned relative-position vectors indexed by the clipped distance p_i - p_j between query
/// and key positions (Shaw et al. 2018; Huang et al. 2020): the storage and arithmetic behind
/// RPE_k and RPE_{k,q}. One table of 2k+1 head-width vectors per layer (or one shared), shared
/// by the heads; optional value vectors. Parameters "key_vectors" [layers|1, 2k+1, D] and
/// "value_vectors" (same shape, when enabled).
class LENGEN_API RelativeVectors {
 public:
  RelativeVectors() = default;
  /// The options `k`, `per_layer`, `values` and `init_std`.
  static std::vector<OptionSpec> options();
  /// Registers the tables on `owner` as the options in `o` say.
  RelativeVectors(torch::nn::Module& owner, const Options& o, const SchemeContext& ctx);
  /// Table row of each (query, key) pair: clip(p_i - p_j, -k, k) + k, [B|1, T, S], from the
  /// first level of the context's IDs; remembered while the positions stay the same.
  const torch::Tensor& index(const AttentionContext& ctx);
  /// q_i . r_ij / sqrt(D): q [B, H, T, D] -> [B, H, T, S].
  torch::Tensor query_term(const torch::Tensor& q, const AttentionContext& ctx);
  /// k_j . r_ij / sqrt(D): k [B, H, S, D] -> [B, H, T, S].
  torch::Tensor key_term(const torch::Tensor& k, const AttentionContext& ctx);
  /// sum_j probs_ij w^V_ij: probs [B, H, T, S] -> [B, H, T, D]. Only with `values: true`.
  torch::Tensor value_term(const torch::Tensor& probs, const AttentionContext& ctx);

  bool has_values() const { return values_.defined(); }

  int64_t k() const { return k_; }

 private:
  torch::Tensor table(const torch::Tensor& t, const AttentionContext& ctx) const;

  int64_t k_ = 0;
  bool per_layer_ = true;
  torch::Tensor keys_, values_;
  PositionMemo<> index_;
};

}  // namespace lengen
