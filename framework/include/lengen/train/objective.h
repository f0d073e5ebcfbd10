#pragma once

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"
#include "lengen/train/batch.h"

#include <torch/types.h>

#include <memory>
#include <vector>

namespace lengen {

/// How an architecture learns from examples and is checked against them: the batch layout,
/// the loss, the teacher-forced verdict and greedy decoding (docs/architecture.md,
/// "Objectives"). The trainer and the evaluator only talk to this interface.
///
///   next_token    (decoder, Layout::kSequence)  predict token t+1 from tokens 0..t
///   seq2seq       (encoder_decoder, kSeq2Seq)  the decoder predicts the target from the source
///   per_position  (encoder, kLabeled)          one label per output slot, all at once
///
/// Teacher-forced verdict == greedy verdict: for the two autoregressive objectives, a greedy
/// decode reproduces the reference iff the argmax given the reference prefix is the reference
/// token at every scored position (by induction the decode's prefixes are the reference's);
/// for per_position the two are the same computation (no feedback). Tested for all three.
class LENGEN_API Objective {
 public:
  virtual ~Objective();
  virtual Layout layout() const = 0;
  /// "next_token", "seq2seq" or "per_position".
  virtual const char* name() const = 0;

  /// The examples rendered in this layout (Task::to_seq2seq / Task::to_labeled) and padded.
  virtual Batch make_batch(const Task& task, const std::vector<Example>& examples) const = 0;

  /// Logits [B, T, V] aligned with batch.targets. attention: see TransformerImpl::forward.
  torch::Tensor logits(Transformer& model,
                       const Batch& batch,
                       std::vector<torch::Tensor>* attention = nullptr) const;

  /// Logits of the positions from batch.first_scored on, [B, T - first_scored, V]: equal to
  /// those rows of logits() (tested), without computing the last block and the head on rows
  /// no target is scored at. What training and teacher-forced checks use.
  torch::Tensor scored_logits(Transformer& model, const Batch& batch) const;

  /// Mean cross-entropy over the scored targets, in float32 (a scalar). `logits` are those
  /// of the last logits.size(1) positions (all of them, or scored_logits()).
  torch::Tensor loss(const torch::Tensor& logits, const Batch& batch) const;

  /// Greedy decoding of the examples' queries (their responses are not read, except by
  /// per_position, whose slots take the response's IDs, which the query fixes; see
  /// Task::to_labeled). Returns the generated responses, EOS included when produced; ids_out
  /// receives the IDs fed for each sequence (prompt + response, as the one-sequence layout).
  /// Default (next_token, seq2seq): KV-cached greedy_decode of the prompts, grouped by length.
  virtual std::vector<std::vector<int64_t>> decode(Transformer& model,
                                                   const Task& task,
                                                   const std::vector<Example>& examples,
                                                   const torch::Device& device,
                                                   std::vector<PositionIds>* ids_out = nullptr) const;
};

/// Greedy KV-cached decoding of one prompt per row (all prompts the same length), for the
/// autoregressive architectures (decoder; encoder_decoder: the encoder reads the prompt and
/// is run once, the decoder starts from the prompt's last token). New tokens'
/// position IDs come from task.causal_position_ids over the prompt and the generated prefix
/// only. Returns the generated responses (EOS included when produced); when `ids_out` is
/// given it receives the IDs fed for each sequence (prompt + response tokens fed back).
LENGEN_API std::vector<std::vector<int64_t>> greedy_decode(
    Transformer& model,
    const Task& task,
    const std::vector<std::vector<int64_t>>& prompts,
    const torch::Device& device,
    std::vector<PositionIds>* ids_out = nullptr);

/// The objective of a layout.
LENGEN_API std::unique_ptr<Objective> make_objective(Layout layout);
/// The objective of a model's architecture.
LENGEN_API std::unique_ptr<Objective> objective_for(const Transformer& model);

/// Fails naming the task and the architecture when the task cannot render its examples in
/// the architecture's layout (tries `probe`, a few of its examples).
LENGEN_API void check_layout(const Task& task,
                             const std::string& task_name,
                             const Architecture& arch,
                             const std::vector<Example>& probe);

}  // namespace lengen
