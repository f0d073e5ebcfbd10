#pragma once

// Everything a position hook may look at for one attention call.

#include "lengen/position/attention_kind.h"

#include <torch/types.h>

#include <cstdint>

namespace lengen {

/// Everything a position hook may look at for one attention call. Position IDs are the
/// task's IDs after this scheme's transform_ids (random offsets, cyclic indexing, ...).
///
/// In incremental (KV-cached) decoding, query_ids holds only the new tokens' IDs, key_ids
/// holds the IDs of every cached key plus the new ones, and cache_offset is the number of
/// keys that were cached before this call (the absolute index of query row 0).
struct AttentionContext {
  AttentionKind kind = AttentionKind::kCausalSelf;
  int64_t layer = 0;         ///< 0-based layer index within its stack
  int64_t heads = 0;         ///< H
  int64_t head_dim = 0;      ///< D
  torch::Tensor query_ids;   ///< [L, B|1, T] int64 (batch 1: the same for every sample)
  torch::Tensor key_ids;     ///< [L, B|1, S] int64
  int64_t query_length = 0;  ///< T
  int64_t key_length = 0;    ///< S
  int64_t cache_offset = 0;  ///< keys already cached before this call
  /// Absolute index of query row 0 in its sequence: cache_offset for self-attention, the
  /// decoder's cached length for cross-attention (whose keys are the whole source).
  int64_t query_offset = 0;
  /// [B, S] bool, true on keys nobody may attend to (batch padding at the end of a shorter
  /// source); undefined: none. Masked by the model after the hooks; a scheme whose terms are
  /// anchored at the last key (ABC) reads each sample's real length from it.
  torch::Tensor key_padding;
  bool training = false;
};

}  // namespace lengen
