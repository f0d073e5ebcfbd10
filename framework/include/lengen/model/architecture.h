#pragma once
// The architecture as a registered component (`model.arch: NAME`): its stacks and how they are
// wired, how examples are laid out for it, its loss and how it decodes. decoder, encoder and
// encoder_decoder are built in (one file each under framework/src/model/architecture/, one line
// in framework/src/model/architecture.cpp); a plugin adds one with Registrar::add_architecture.
// `lengen plugins` lists them; the architecture contract runs every registered one.

#include "lengen/core/export.h"
#include "lengen/model/batch.h"
#include "lengen/model/config.h"
#include "lengen/model/stack.h"
#include "lengen/model/transformer.h"
#include "lengen/registry/registry.h"
#include "lengen/task/task.h"

#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// What an architecture is built with (nothing yet: the built-in ones have no options).
struct ArchitectureContext {};

/// One registered architecture: the stacks the Transformer builds and the wiring that runs them
/// (forward), the batch layout, the loss, the teacher-forced verdict and what greedy decoding
/// needs (docs/architecture.md, "Architectures, layouts, objectives"). The Transformer, the
/// trainer and the evaluator only talk to this interface, through TransformerImpl::arch().
///
///   decoder          one causal stack over `BOS query = response EOS`  ("next_token")
///   encoder_decoder  a bidirectional encoder over the source, a causal decoder with
///                    cross-attention predicting the target token by token  ("seq2seq")
///   encoder          one bidirectional stack, one label per output slot at once
///                    ("per_position")
///
/// Teacher-forced verdict == greedy verdict: for the two autoregressive objectives, a greedy
/// decode reproduces the reference iff the argmax given the reference prefix is the reference
/// token at every scored position (by induction the decode's prefixes are the reference's);
/// for per_position the two are the same computation (no feedback). Tested for all three.
class LENGEN_API Architecture {
 public:
  virtual ~Architecture();
  /// The registered name (`model.arch`).
  virtual const char* name() const = 0;
  /// The stacks of a model of this architecture under `cfg`, in the order they run (at least
  /// one; StackSpec says how they are built and numbered).
  virtual std::vector<StackSpec> stacks(const ModelConfig& cfg) const = 0;

  /// The `model:` keys only this architecture reads (encoder_decoder: encoder_layers): refused
  /// under other architectures and left out of their config.yaml.
  virtual std::vector<std::string> own_keys() const { return {}; }

  /// The objective's name: "next_token", "seq2seq" or "per_position".
  virtual const char* objective() const = 0;

  /// The wiring: logits [B, T - in.outputs_from, V] of one forward pass of `model`, built from
  /// its parts (TransformerImpl's "parts" section: position IDs, embed, run_stack, head).
  /// TransformerImpl::forward checks the common arguments first and sizes `attention`.
  virtual torch::Tensor forward(TransformerImpl& model,
                                const ModelInputs& in,
                                KVCache* cache,
                                std::vector<torch::Tensor>* attention) const = 0;

  /// Whether one forward pass gives the whole output (no token-by-token decoding): what
  /// per-sample and adaptive looping (model.loops_per_length, eval.adaptive_loops) need.
  virtual bool one_pass() const { return false; }

  /// Whether an example is one causal sequence a row (decoder): what packed rows (train.pack)
  /// and padding to a fixed shape (train.cuda_graphs) need, since neither changes the loss
  /// then.
  virtual bool one_sequence() const { return false; }

  /// The examples rendered in this architecture's layout (Task::to_seq2seq / Task::to_labeled
  /// or one sequence) and padded.
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
  /// of the last logits.size(1) positions (all of them, or scored_logits()). With
  /// label_smoothing e the target is (1 - e) * one-hot + e / V (train.label_smoothing).
  virtual torch::Tensor loss(const torch::Tensor& logits,
                             const Batch& batch,
                             double label_smoothing = 0.0) const;

  /// The first forward pass of a KV-cached greedy decode of same-length `prompts` (token
  /// IDs, each BOS query =), on the CPU. Default (next_token): the prompts with their causal
  /// position IDs. encoder_decoder: the task's source for the encoder and the start token for
  /// the decoder. Not called for one_pass() architectures. eval/decode.h runs the loop.
  virtual ModelInputs prompt_inputs(const Task& task,
                                    const std::vector<std::vector<int64_t>>& prompts) const;

  /// one_pass() architectures: the responses of one forward pass over the examples (their
  /// responses are not read, except for the slots the query fixes; see Task::to_labeled);
  /// ids_out receives each sequence's position IDs. Default: fails (the architecture decodes
  /// token by token, eval/decode.h).
  virtual std::vector<std::vector<int64_t>> predict(Transformer& model,
                                                    const Task& task,
                                                    const std::vector<Example>& examples,
                                                    const torch::Device& device,
                                                    std::vector<PositionIds>* ids_out) const;

  /// Fails naming the task and this architecture when the task cannot render its examples in
  /// this layout (tries `probe`, a few of its examples).
  void check_layout(const Task& task,
                    const std::string& task_name,
                    const std::vector<Example>& probe) const;
};

/// The registered architecture `name` (built once per name and shared; architectures hold no
/// state). Fails listing the registered ones and the closest.
LENGEN_API std::shared_ptr<const Architecture> architecture(const std::string& name);

/// The architectures (`model.arch`), and the one an Architecture class registers in
/// (Registrar::add_architecture).
using ArchitectureRegistry = Registry<Architecture, ArchitectureContext>;
LENGEN_API ArchitectureRegistry& architecture_registry();

inline ArchitectureRegistry& registry_of(const Architecture*) {
  return architecture_registry();
}

}  // namespace lengen
