#pragma once

// What a scheme computes from the positions of an attention call alone, remembered while they stay
// the same.

#include "lengen/core/export.h"
#include "lengen/position/attention_context.h"

#include <torch/types.h>

#include <cstdint>

namespace lengen {

/// True when `a` and `b` hold the same positions: the same tensor or the same view of the same
/// memory (position IDs are never written in place), or, on the CPU, equal content. On a GPU
/// content is not compared (that would read back from the device). The test behind PositionMemo.
LENGEN_API bool same_positions(const torch::Tensor& a, const torch::Tensor& b);

/// Remembers what a scheme computes from the positions of an attention call alone (ALiBi's
/// bias, T5's buckets, FIRE's distance pairs, RoPE's angles, RPE's clipped indices), so every
/// layer of a forward pass and every later step with the same positions reuse it instead of
/// recomputing it. Never store anything that depends on parameters (it would go stale).
///
///   memo_.get(ctx, [&] { return expensive(ctx.query_ids, ctx.key_ids); })
template <class Value = torch::Tensor>
class PositionMemo {
 public:
  /// The remembered value for ctx's query and key IDs (and `variant`, e.g. causal or not),
  /// computing and remembering it with `compute()` on a miss.
  template <class Compute>
  const Value& get(const AttentionContext& ctx, Compute&& compute, int64_t variant = 0) {
    if (!(valid_ && variant == variant_ && same_positions(ctx.query_ids, query_ids_) &&
          same_positions(ctx.key_ids, key_ids_))) {
      value_ = compute();
      query_ids_ = ctx.query_ids;
      key_ids_ = ctx.key_ids;
      variant_ = variant;
      valid_ = true;
    }
    return value_;
  }

 private:
  bool valid_ = false;
  int64_t variant_ = 0;
  torch::Tensor query_ids_, key_ids_;
  Value value_{};
};

}  // namespace lengen
