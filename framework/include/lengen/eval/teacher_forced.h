#pragma once

// Exact match under greedy decoding decided by one teacher-forced pass, and the length-sorted
// batches the evaluator cuts its examples into. src/eval/teacher_forced.cpp.

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"

#include <torch/types.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace lengen {

/// The first response position where greedy decoding leaves the reference, if any.
struct FirstError {
  int64_t position = -1;   ///< index into the sequence's targets; -1: the sample is correct
  int64_t expected = -1;   ///< reference token there
  int64_t predicted = -1;  ///< the model's argmax there
};

/// The evaluator's batches: consecutive ranges [begin, end) over `lengths` (ascending) that
/// cover it in order, each of at most `max_sequences` sequences and at most `max_tokens`
/// padded tokens (count x its longest; 0: no cap). A sequence longer than `max_tokens` is a
/// batch of its own.
LENGEN_API std::vector<std::pair<size_t, size_t>> eval_batches(const std::vector<int64_t>& lengths,
                                                               int64_t max_sequences,
                                                               int64_t max_tokens);

/// The token cap of an evaluation batch: `configured` when positive, else by device. On the
/// CPU it keeps the pass's widest activation per token (fused q/k/v, the feed-forward's hidden
/// layer, a 256-key block of attention scores per head) within kCpuEvalBatchBytes in float32:
/// such batches stay in cache and reuse the heap, where larger ones are mapped and faulted in
/// afresh on every pass (glibc maps allocations over 32 MiB) and run several times slower. On
/// a GPU: kGpuEvalBatchTokens, large batches that fill the device.
constexpr int64_t kCpuEvalBatchBytes = int64_t{16} << 20;
constexpr int64_t kGpuEvalBatchTokens = 131072;
LENGEN_API int64_t eval_batch_tokens(int64_t configured,
                                     const torch::Device& device,
                                     const ModelConfig& model);

/// Exact match under greedy decoding, decided by one teacher-forced forward pass in the
/// model's layout (its Architecture): a greedy decode reproduces the reference exactly iff at every
/// response position the argmax of the logits given the reference prefix is the reference
/// token (then the decode's prefixes are the reference's prefixes, by induction). Examples
/// are sorted by length and cut into batches of at most `batch_size` sequences and
/// `batch_tokens` padded tokens (eval_batches; 0: by device and model, eval_batch_tokens).
LENGEN_API std::vector<bool> teacher_forced_exact_match(Transformer& model,
                                                        const Task& task,
                                                        const std::vector<Example>& examples,
                                                        const torch::Device& device,
                                                        int64_t batch_size,
                                                        int64_t batch_tokens = 0);

/// The same pass, saying for each example where it first goes wrong (position -1: correct).
LENGEN_API std::vector<FirstError> teacher_forced_first_errors(Transformer& model,
                                                               const Task& task,
                                                               const std::vector<Example>& examples,
                                                               const torch::Device& device,
                                                               int64_t batch_size,
                                                               int64_t batch_tokens = 0);

}  // namespace lengen
