#pragma once

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/example.h"

#include <torch/types.h>

#include <vector>

namespace lengen {

/// Examples of one layout padded into tensors for teacher forcing. Always (T = padded length):
///   inputs   [B, T]     what the model reads (decoder: tokens[0 .. n-2]; encoder: the input;
///                       encoder_decoder: target[0 .. n-2])
///   targets  [B, T]     what each position must predict (next token, or the label)
///   mask     [B, T]     1.0 where targets[t] is scored (loss and exact match)
///   ids      [L, B, T]  position IDs of the inputs (0 on padding)
/// Labeled layout (encoder) also: padding [B, T] bool, true on padding (masked as keys),
/// labelled [B, T] float, the mask itself (the slots that carry a label: what adaptive looping
/// measures confidence on), and lengths [B] int64 on the host (each sample's input tokens that
/// carry no label: the n of model.loops_per_length; Batch::to leaves it on the host).
/// Seq2seq layout also: source [B, S], source_ids [L, B, S], source_padding [B, S] bool.
/// Right padding is invisible to real tokens: under a causal mask, or masked as keys.
/// Packed one-sequence batches (make_packed_batch) also: segments [B, T] int64, which sample of
/// its row each position belongs to (-1 on padding), and sequence_index [B, T] int64, its
/// index within that sample; undefined when every row holds one sample.
struct LENGEN_API Batch {
  torch::Tensor inputs, targets, mask, ids;
  torch::Tensor padding, labelled;
  torch::Tensor lengths;
  torch::Tensor source, source_ids, source_padding;
  torch::Tensor segments, sequence_index;
  int64_t tokens = 0;  ///< number of non-pad tokens the model reads (for tokens/s)
  /// Number of scored targets (mask's sum), counted on the host when the batch is made so
  /// that the training step need not read it back from the device; -1: not counted.
  int64_t scored = -1;
  /// The first position any sample scores (0 when none does, or not counted): positions
  /// before it need no logits (ModelInputs::outputs_from).
  int64_t first_scored = 0;

  /// Tokens the model computes on, padding included (B x T, plus the source in seq2seq).
  int64_t padded_tokens() const;

  Batch to(const torch::Device& device) const;
  /// What the model's forward reads; `scored_rows_only`: logits only from first_scored on.
  ModelInputs model_inputs(bool scored_rows_only = false) const;
};

/// The one-sequence batch `b` right-padded to `length` positions (>= its own) with scoring
/// from `first_scored` (<= its own) on: inputs, targets and IDs padded with 0, mask with 0, so
/// that under the causal mask the loss and gradients are those of `b` (what lets a training
/// step replay one captured CUDA graph per padded shape). `tokens` and `scored` are kept.
/// Fails for other layouts (their padding is seen as keys).
LENGEN_API Batch pad_sequence_batch(const Batch& b, int64_t length, int64_t first_scored);

/// Splits samples of the given lengths into at most `buckets` groups of consecutive lengths
/// (indices sorted by length, stable; equal counts up to one), so that each group pads only
/// to its own longest sample. Every index appears in exactly one group; no group is empty.
LENGEN_API std::vector<std::vector<size_t>> length_buckets(const std::vector<size_t>& lengths,
                                                           int64_t buckets);

/// Pads and stacks examples in the one-sequence layout (all with the same number of ID
/// levels).
LENGEN_API Batch make_batch(const std::vector<Example>& examples, int64_t pad_id);
/// The one-sequence layout with several samples per row (train.pack): rows as long as the
/// longest sample's inputs, filled first-fit by decreasing length (ties in the given order),
/// each sample's inputs, targets, mask and IDs written as make_batch writes them, one after
/// the other. With the model's block-diagonal causal mask (ModelInputs::segments) each
/// position sees what it sees in make_batch's row of its own, so the loss and gradients are
/// make_batch's (tested); what changes is the padding. Row r's samples: `rows_out[r]`.
LENGEN_API Batch make_packed_batch(const std::vector<Example>& examples,
                                   int64_t pad_id,
                                   std::vector<std::vector<size_t>>* rows_out = nullptr);
/// Pads and stacks (source, target) pairs: the decoder reads target[0 .. n-2] and predicts
/// target[1 .. n-1].
LENGEN_API Batch make_seq2seq_batch(const std::vector<Seq2SeqExample>& examples, int64_t pad_id);
/// Pads and stacks (input, labels) examples.
LENGEN_API Batch make_labeled_batch(const std::vector<LabeledExample>& examples, int64_t pad_id);

}  // namespace lengen
