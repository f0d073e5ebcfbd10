#pragma once
// The matrix-multiply FLOPs of a model on given sequence lengths: what `lengen bench` divides
// by the step time to print TFLOP/s and, with --peak-tflops, the fraction of the hardware's
// peak (docs/performance.md, "FLOP count").

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"

#include <cstdint>

namespace lengen {

/// Forward-pass FLOPs of one sequence, 2 FLOPs per multiply-add, counting every matrix
/// product: per applied layer (depth x loops) the q/k/v/output projections, query-key scores
/// and the weighted sum of values over the keys each query may see (causal: t keys for the
/// t-th token; bidirectional: all), cross-attention in an encoder-decoder's decoder, the
/// feed-forward (two products, three with a gated activation), and the output head over
/// every position the model reads. Norms, softmax, embedding look-ups, position schemes' own
/// terms and the optimizer are left out (elementwise work, a few percent at these widths).
/// `target`: tokens the decoder (or the encoder of an encoder-only model) reads; `source`:
/// tokens an encoder-decoder's encoder reads (ignored otherwise). `loops`: how many times the
/// stacks run for this sequence (0: `model.loops`; a sample's own count under
/// `model.loops_per_length`, ModelConfig::sample_loops).
LENGEN_API double forward_flops(
    const ModelConfig& model, int64_t vocab, int64_t target, int64_t source = 0, int64_t loops = 0);

/// Training FLOPs: the forward pass and a backward pass of twice its cost.
inline double training_flops(const ModelConfig& model,
                             int64_t vocab,
                             int64_t target,
                             int64_t source = 0,
                             int64_t loops = 0) {
  return 3.0 * forward_flops(model, vocab, target, source, loops);
}

}  // namespace lengen
