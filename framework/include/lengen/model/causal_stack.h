#pragma once
// The wiring the decoder and encoder_decoder share, for any architecture to reuse in its
// Architecture::forward: a causal stack over the tokens with a KV cache, optionally
// cross-attending to an earlier stack's output (src/model/architecture/causal_stack.cpp).

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"

#include <torch/types.h>

#include <vector>

namespace lengen {

/// What a stack cross-attends to: an earlier stack's output over the source.
struct LENGEN_API CrossMemory {
  torch::Tensor output;            ///< [B, S, C]
  torch::Tensor padding;           ///< [B, S] bool, true on source padding
  std::vector<torch::Tensor> ids;  ///< per scheme: the source's IDs [L', B, S]
};

/// Logits [B, T - in.outputs_from, V] of the causal stack `stack` over in.tokens, the KV
/// cache (when given) read and extended: the decoder, and encoder_decoder's decoder
/// cross-attending to `memory`. `ids`: the tokens' IDs per scheme when they were drawn
/// together with the source's (one pass over whole pairs); empty: drawn here. Packed rows
/// (in.segments) attend within their own sample.
LENGEN_API torch::Tensor causal_stack(TransformerImpl& model,
                                      const ModelInputs& in,
                                      KVCache* cache,
                                      std::vector<torch::Tensor>* attention,
                                      size_t stack,
                                      const CrossMemory* memory,
                                      std::vector<torch::Tensor> ids);

}  // namespace lengen
