#pragma once

// The model: a Transformer over a task's vocabulary in one of the registered architectures, with
// pluggable position schemes; what it reads (ModelInputs) and the KV cache of incremental
// decoding. Its parts have their own headers, included here: config.h (ModelConfig),
// attention.h, feed_forward.h, block.h; the architecture it is built in (architecture.h)
// includes this header. src/model/transformer.cpp.

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/model/activation.h"
#include "lengen/model/attention.h"
#include "lengen/model/block.h"
#include "lengen/model/config.h"
#include "lengen/model/feed_forward.h"
#include "lengen/model/norm.h"
#include "lengen/model/stack.h"
#include "lengen/position/scheme.h"
#include "lengen/task/example.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

class Architecture;

/// Keys and values cached for incremental decoding, one entry per layer application, plus the
/// raw position IDs of every cached token (schemes need them for bias rows). For an
/// encoder-decoder also the encoder's output and each decoder layer's cross-attention keys
/// and values, computed once per source.
struct LENGEN_API KVCache {
  std::vector<torch::Tensor> keys;    ///< per application [B, H, S, D] (after any q/k transform)
  std::vector<torch::Tensor> values;  ///< per application [B, H, S, D]
  torch::Tensor ids;                  ///< [L, B, S] task IDs of cached tokens
  std::vector<torch::Tensor> cross_keys, cross_values;  ///< per decoder application [B, H, Ss, D]
  torch::Tensor memory;                                 ///< encoder output [B, Ss, C]
  torch::Tensor memory_padding;                         ///< [B, Ss] bool, true on source padding
  std::vector<torch::Tensor> memory_ids;  ///< per scheme: transformed source IDs [L', B, Ss]

  int64_t length() const { return ids.defined() ? ids.size(2) : 0; }

  void clear() { *this = KVCache(); }
};

/// What the model reads. Decoder and encoder: tokens/ids (and `padding` for the encoder).
/// Encoder-decoder: source/source_ids/source_padding for the encoder and tokens/ids for the
/// decoder (the target); with a KV cache the source is given on the first call only.
struct LENGEN_API ModelInputs {
  torch::Tensor tokens;          ///< [B, T] int64
  torch::Tensor ids;             ///< [L, B, T] int64, the task's IDs
  torch::Tensor padding;         ///< [B, T] bool, true on padding keys; undefined: none
  torch::Tensor source;          ///< [B, S] int64 (encoder_decoder)
  torch::Tensor source_ids;      ///< [L, B, S] int64
  torch::Tensor source_padding;  ///< [B, S] bool; undefined: none
  /// Logits are wanted only for positions [outputs_from, T): the last block computes its
  /// queries, feed-forward and head on those rows only (every row still serves as a key),
  /// and forward() returns [B, T - outputs_from, V], equal to those rows of the full logits.
  /// Training and teacher-forced checks set it to the batch's first scored position
  /// (Batch::first_scored). Without a cache and attention maps only; 0: every position.
  int64_t outputs_from = 0;
  /// Encoder (labeled layout): each sample's input tokens that carry no label, [B] int64 on
  /// the host (model.loops_per_length), and the labelled positions, [B, T] float, 1 where
  /// labelled (what adaptive looping's confidence is measured on). Undefined lengths: every
  /// sample loops `loops` times.
  torch::Tensor lengths;
  torch::Tensor labelled;
  /// Packed rows (decoder, no cache; Batch::segments): which sample of its row each position
  /// belongs to, [B, T] int64, and its index within that sample, [B, T] int64. A position
  /// attends only to earlier positions of its own sample, and the schemes that read the
  /// sequence index see `sequence_index`. Undefined: one sample per row.
  torch::Tensor segments;
  torch::Tensor sequence_index;
};

/// A Transformer over a task's vocabulary with pluggable position schemes: the stacks its
/// architecture declares (Architecture::stacks), wired by the architecture's forward
/// (docs/architecture.md):
///   decoder          causal stack, next-token logits at every position;
///   encoder          bidirectional stack with a key-padding mask, a per-position classifier
///                    (the output head applied at every position; the layout says which count);
///   encoder_decoder  bidirectional encoder over the source, causal decoder over the target
///                    with cross-attention to the encoder output.
/// Parameter names (stable; documented in docs/checkpoints.md):
///   tok_emb.weight [V, C] (shared by every stack); position.<i>.* (scheme i);
///   <stack>.<l>.attn.qkv.weight, <stack>.<l>.attn.out.weight, <stack>.<l>.ff.{up,down}.weight,
///   <stack>.<l>.norm_{attn,ff}_{pre,post}.weight for each stack ("blocks": the decoder's, or
///   the encoder's for `encoder`; "encoder": encoder_decoder's encoder);
///   <stack>.<l>.cross.{q,kv,out}.weight and <stack>.<l>.norm_cross_{pre,post}.weight
///   (cross-attention); norm_<stack>.weight over every stack's output but the last (pre-norm);
///   norm_final.weight; lm_head.weight (absent when tied), lm_head.bias (head_bias);
///   norm_embedding.weight (embedding_norm).
/// Looping (universal Transformers): each stack applies its blocks `loops` times (set_loops
/// changes it at test time); with shared_layers one block per stack is applied `depth` times
/// per loop. Position schemes see one layer index per distinct block (earlier stacks first),
/// whatever the number of loops.
class LENGEN_API TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(ModelConfig cfg,
                  int64_t vocab_size,
                  std::vector<std::shared_ptr<PositionScheme>> schemes);

  /// Logits [B, T, V] for in.tokens ([B, T - in.outputs_from, V]: the last rows). With a cache
  /// (decoder, encoder_decoder), tokens/ids are only the new tokens; cached keys are reused and
  /// extended (encoder_decoder: the source is encoded on the first call and kept in the cache).
  /// attention: if non-null, receives one [B, H, T, S] tensor per attention application, named by
  /// attention_names().
  torch::Tensor forward(const ModelInputs& in,
                        KVCache* cache = nullptr,
                        std::vector<torch::Tensor>* attention = nullptr);

  /// Decoder-only shorthand: tokens [B, T], ids [L, B, T] -> logits [B, T, V].
  torch::Tensor forward(const torch::Tensor& tokens,
                        const torch::Tensor& ids,
                        KVCache* cache = nullptr,
                        std::vector<torch::Tensor>* attention = nullptr);

  /// Names of the maps forward() returns in `attention`, in order: per stack in running order
  /// "<stack>.<l>" (self-attention), then "<stack>.<l>.cross" (cross-attention): e.g.
  /// "encoder.<l>", "blocks.<l>", "blocks.<l>.cross" for encoder_decoder; with loops > 1 each
  /// application is suffixed "@<loop>".
  std::vector<std::string> attention_names() const;

  const ModelConfig& config() const { return cfg_; }

  /// The architecture it was built in (model.arch): its stacks, wiring, layout, loss and
  /// decoding.
  const Architecture& arch() const { return *arch_; }

  /// Its stacks, as the architecture declared them (running order).
  const std::vector<StackSpec>& stacks() const { return stacks_; }

  const std::vector<std::shared_ptr<PositionScheme>>& schemes() const { return schemes_; }

  int64_t vocab_size() const { return vocab_size_; }

  /// Number of trainable scalars.
  int64_t parameter_count() const;
  /// Applications of each stack at the next forward (eval.loops; 1 = the stack once).
  void set_loops(int64_t loops);

  int64_t loops() const { return loops_; }

  /// Adaptive looping at test time (Fan et al. 2025; eval.adaptive_loops, encoder only): with
  /// extra > 0 and the model in eval mode, each sample runs up to its own loop count + extra
  /// loops and forward() returns, per sample, the logits of the loop whose output is most
  /// confident: the lowest sum over its labelled positions of -log p(argmax) (the cross-
  /// entropy against its own prediction; the earliest loop on ties). 0: off.
  void set_adaptive_loops(int64_t extra);

  int64_t adaptive_loops() const { return adaptive_extra_; }

  /// What forward()'s `attention` receives: the weights (false, default) or the pre-softmax
  /// scores (true; analysis of Duan & Shi 2023's attention bias calibration).
  void set_attention_scores(bool scores) { attention_scores_ = scores; }

  /// Shows every block's output and every attention's head outputs to `probe`, which may
  /// replace them (ModelProbe; nullptr: off). Not with model.loops_per_length.
  void set_probe(std::shared_ptr<const ModelProbe> probe) { probe_ = std::move(probe); }

  // --- The parts an architecture wires (Architecture::forward) ---

  /// Runs stack `stack` (loops x depth applications) over x [B, T, C]. Its self-attention
  /// maps go to `attention` at the stack's place (attention_names()), its keys and values to
  /// `cache` (null: none), its cross-attention (StackSpec::cross) reads `cross`. The last
  /// application computes only rows [rows_from, T) (AttentionInputs::rows_from).
  torch::Tensor run_stack(size_t stack,
                          torch::Tensor x,
                          const AttentionInputs& self,
                          const AttentionInputs& cross,
                          KVCache* cache,
                          std::vector<torch::Tensor>* attention,
                          int64_t rows_from = 0);
  /// Stack `stack` (no cross-attention, no cache) with a loop count per sample (host_loops
  /// [B], on the host): a sample's state stops changing after its own count. With `adaptive`,
  /// returns per sample the logits of its most confident loop (set_adaptive_loops);
  /// otherwise the logits after the last loop.
  torch::Tensor run_stack_per_sample(size_t stack,
                                     torch::Tensor x,
                                     const AttentionInputs& self,
                                     const torch::Tensor& host_loops,
                                     const torch::Tensor& labelled,
                                     bool adaptive,
                                     int64_t rows_from);
  /// The norm over stack `stack`'s output when it has one (every stack but the last, pre-norm
  /// models); x itself otherwise.
  torch::Tensor stack_output(size_t stack, torch::Tensor x);
  /// The final norm and the output head: [B, T, C] -> logits [B, T, V].
  torch::Tensor head(torch::Tensor x);
  /// The token embedding plus every input-embedding scheme's term (ids: one per scheme), with
  /// the embedding norm and dropout.
  torch::Tensor embed(const torch::Tensor& tokens, const std::vector<torch::Tensor>& ids);
  /// The attention inputs every self-attention starts from: the schemes, and the IDs of the
  /// queries and keys (kept by the caller).
  AttentionInputs attention_inputs(const std::vector<torch::Tensor>* query_ids,
                                   const std::vector<torch::Tensor>* key_ids) const;

 private:
  /// Creates stack `i`'s blocks (and its output norm when it is not the last).
  void build_stack(size_t i);
  /// model.init: normal: every Linear and Embedding weight of the core N(0, std), biases 0.
  void init_normal(double std);

  ModelConfig cfg_;
  std::shared_ptr<const Architecture> arch_;
  std::vector<StackSpec> stacks_;  ///< arch_->stacks(cfg_)
  int64_t vocab_size_;
  int64_t loops_ = 1;
  int64_t adaptive_extra_ = 0;
  bool attention_scores_ = false;
  std::shared_ptr<const ModelProbe> probe_;
  std::vector<std::shared_ptr<PositionScheme>> schemes_;
  torch::nn::Embedding tok_emb_{nullptr};
  std::vector<torch::nn::ModuleList> stack_modules_;  ///< one per stack
  std::vector<Norm> stack_norms_;                     ///< one per stack (null: none)
  Norm norm_final_{nullptr}, norm_embedding_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
  torch::nn::Dropout emb_dropout_{nullptr};
};

TORCH_MODULE(Transformer);

}  // namespace lengen
