#pragma once

// The hooks a position scheme can implement (PositionScheme::hooks()).

#include <cstdint>

namespace lengen {

/// The hooks a scheme can implement; the model calls only the ones a scheme declares.
enum Hook : uint32_t {
  kHookNone = 0,
  kHookInputEmbedding = 1u << 0,  ///< embed(): a vector per token added to the token embedding
  kHookQKTransform = 1u << 1,     ///< transform_qk(): rotates/transforms q and k (RoPE)
  kHookAdditiveBias = 1u << 2,    ///< additive_bias(): [B|1, H, T, S] added to the logits
  kHookRelativeLogits = 1u << 3,  ///< relative_logits(): q-dependent relative terms
  kHookRelativeValues = 1u << 4,  ///< relative_values(): a term added to each query's output
};

}  // namespace lengen
