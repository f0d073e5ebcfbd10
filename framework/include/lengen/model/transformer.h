#pragma once

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/model/activation.h"
#include "lengen/model/norm.h"
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

/// The model section of an experiment. Every field is a YAML key of `model:`; the key `bias`
/// sets attention_bias and ff_bias together.
struct LENGEN_API ModelConfig {
  std::string arch = "decoder";        ///< a registered architecture (architectures())
  int64_t layers = 2;                  ///< decoder layers; the encoder's for `encoder`; 0 allowed
  int64_t encoder_layers = -1;         ///< encoder_decoder: encoder depth (-1: same as layers)
  int64_t heads = 4;
  int64_t d_model = 128;               ///< C
  int64_t d_head = 0;                  ///< D; 0 means d_model / heads
  int64_t d_ff = 512;                  ///< hidden width of the feed-forward (per gate input)
  std::string norm = "layernorm";      ///< a registered norm (norm_registry())
  std::string norm_position = "pre";   ///< pre | post | pre_post
  std::string activation = "gelu";     ///< a registered activation (activation_registry())
  double dropout = 0.0;
  double norm_eps = 1e-5;
  double softmax_eps = 0.0;            ///< exp(s - max) / (sum + eps); TAOTP's Figure 1.1: 1e-10
  bool attention_bias = false;         ///< biases in the q/k/v and output projections
  bool ff_bias = false;                ///< biases in the feed-forward projections
  bool tie_embeddings = false;         ///< LM head shares the token embedding
  bool head_bias = false;              ///< a bias in the output head (BERT's classifier)
  bool embedding_norm = false;         ///< a norm over token + position embeddings (BERT)
  std::string init = "pytorch";        ///< pytorch (each module's default) | normal
  double init_std = 0.02;              ///< std of `init: normal` (BERT, GPT-2: 0.02)
  bool shared_layers = false;          ///< universal: one block per stack applied `layers` times
  int64_t loops = 1;                   ///< universal/looped: each stack applied `loops` times
  bool input_injection = false;        ///< add the input embedding again before every loop > 0
  /// Loops tied to the input (Fan et al. 2025), encoder only: > 0 gives each sample
  /// max(1, round(loops_per_length * n + loops_offset)) loops (half up), n = its input tokens
  /// that carry no label (ModelInputs::lengths); 0: `loops` for every sample.
  double loops_per_length = 0.0;
  int64_t loops_offset = 0;
  /// Each sample's loop count (the rule above, or `loops`), [B] int64 from lengths [B].
  torch::Tensor sample_loops(const torch::Tensor& lengths) const;

  /// Reads and validates the `model:` map (unknown keys, ranges, choices).
  /// The section's schema (validation and docs/config-reference.md).
  static ComponentSpec schema();
  static ModelConfig from_config(const ConfigNode& node);
  YAML::Node to_yaml() const;
  int64_t head_dim() const { return d_head > 0 ? d_head : d_model / heads; }
  /// Encoder depth (0 for `decoder`).
  int64_t encoder_depth() const;
  /// Decoder depth (0 for `encoder`).
  int64_t decoder_depth() const;
  /// Blocks with their own weights in a stack of `depth` applications per loop.
  int64_t distinct(int64_t depth) const { return shared_layers ? std::min<int64_t>(depth, 1) : depth; }
  /// Self-attention layers with their own weights over all stacks: what position schemes
  /// with per-layer tables allocate (SchemeContext::layers). Loops reuse them.
  int64_t attention_layers() const { return distinct(encoder_depth()) + distinct(decoder_depth()); }
};

/// An architecture, registered by name: which stacks it has and how examples are laid out
/// for it (the objective follows from the layout: next-token, seq2seq or per-position).
struct LENGEN_API Architecture {
  std::string name;
  std::string summary;
  Layout layout = Layout::kSequence;
  bool encoder = false;  ///< a bidirectional encoder stack
  bool decoder = false;  ///< a causal decoder stack
  bool cross = false;    ///< decoder blocks cross-attend to the encoder's output
};

/// Registers an architecture (the three built-in ones are registered at start-up); a name
/// registered twice is an error.
LENGEN_API void register_architecture(Architecture arch);
/// Every registered architecture, by name.
LENGEN_API std::vector<Architecture> architectures();
/// The architecture `name`; fails listing the registered ones and the closest.
LENGEN_API const Architecture& architecture(const std::string& name);

/// Keys and values cached for incremental decoding, one entry per layer application, plus the
/// raw position IDs of every cached token (schemes need them for bias rows). For an
/// encoder-decoder also the encoder's output and each decoder layer's cross-attention keys
/// and values, computed once per source.
struct LENGEN_API KVCache {
  std::vector<torch::Tensor> keys;    ///< per application [B, H, S, D] (after any q/k transform)
  std::vector<torch::Tensor> values;  ///< per application [B, H, S, D]
  torch::Tensor ids;                  ///< [L, B, S] task IDs of cached tokens
  std::vector<torch::Tensor> cross_keys, cross_values;  ///< per decoder application [B, H, Ss, D]
  torch::Tensor memory;               ///< encoder output [B, Ss, C]
  torch::Tensor memory_padding;       ///< [B, Ss] bool, true on source padding
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
};

/// Fails (lengen::Error) naming the scheme's position in `position:` and the attention kind
/// when a scheme has no meaning in that kind of attention (PositionScheme::supports), which
/// the architecture `arch` uses. Called when a model is built, before any training.
LENGEN_API void check_position_support(const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                                       AttentionKind kind,
                                       const std::string& arch);

/// Everything one attention call needs besides its input (docs/architecture.md, "Attention
/// inputs"). Built by the stack; the attention reads only what its kind uses.
struct LENGEN_API AttentionInputs {
  const std::vector<std::shared_ptr<PositionScheme>>* schemes = nullptr;
  const std::vector<torch::Tensor>* query_ids = nullptr;  ///< per scheme [L', B|1, T]
  const std::vector<torch::Tensor>* key_ids = nullptr;    ///< per scheme [L', B|1, S]
  torch::Tensor key_padding;   ///< [B, S] bool, true on keys nobody may attend to
  torch::Tensor memory;        ///< cross-attention: the encoder output [B, S, C]
  int64_t query_offset = 0;    ///< decoder: tokens cached before this call (AttentionContext)
  /// Self-attention without a cache: outputs only for query rows [rows_from, T) (keys and
  /// values still from every row); the result is [B, T - rows_from, C]. The schemes see
  /// those rows as queries at query_offset rows_from, as in cached decoding.
  int64_t rows_from = 0;
  torch::Tensor* cache_k = nullptr;   ///< this application's cache slot (updated in place)
  torch::Tensor* cache_v = nullptr;
  torch::Tensor* attn_out = nullptr;  ///< receives the attention weights [B, H, T, S]
  /// attn_out receives the pre-softmax scores instead (scaled q.k plus the schemes' biases,
  /// -inf where masked).
  bool scores = false;
};

/// Multi-head attention that calls the position schemes' hooks. Causal self-, bidirectional
/// self- and cross-attention share this class; the AttentionKind decides masking, which
/// hooks apply (cross-attention calls only schemes that support kCross) and the parameters:
/// self: qkv.weight [3*H*D, C] (rows: q, then k, then v); cross: q.weight [H*D, C] and
/// kv.weight [2*H*D, C] (k rows first) over the encoder output; both: out.weight [C, H*D].
class LENGEN_API AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& cfg, int64_t layer, AttentionKind kind);

  /// x [B, T, C] -> [B, T, C]. Self-attention with a cache: the new keys are appended to the
  /// cache slot. Cross-attention with a cache: keys/values of the memory are computed on the
  /// first call and reused after.
  torch::Tensor forward(const torch::Tensor& x, const AttentionInputs& in);

 private:
  int64_t layer_, heads_, head_dim_;
  AttentionKind kind_;
  double dropout_;
  double softmax_eps_;
  torch::nn::Linear qkv_{nullptr}, q_{nullptr}, kv_{nullptr}, out_{nullptr};
};
TORCH_MODULE(Attention);

/// Feed-forward `down(act(up(x)))` with the registered activation `model.activation`
/// (lengen/model/activation.h); a gated one reads gate and linear halves fused in up.weight
/// [2*d_ff, C] (gate rows first).
class LENGEN_API FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] -> [B, T, C]

 private:
  std::shared_ptr<Activation> act_;
  torch::nn::Linear up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(FeedForward);

/// One Transformer block with pre-, post- or pre+post normalisation (models.md §1.2):
/// self-attention (causal or bidirectional), cross-attention to an encoder output when the
/// block has one (encoder-decoder), then the feed-forward, each a residual branch.
class LENGEN_API BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, int64_t layer, AttentionKind self_kind, bool cross);
  /// x [B, T, C] -> [B, T, C]; `cross` is used only by a block with cross-attention. With
  /// self.rows_from = r > 0 only rows [r, T) are computed past the self-attention's keys:
  /// x [B, T, C] -> [B, T - r, C] (cross-attention then reads the query IDs of those rows).
  torch::Tensor forward(const torch::Tensor& x,
                        const AttentionInputs& self,
                        const AttentionInputs& cross = {});

 private:
  bool pre_, post_;
  double dropout_;
  Attention attn_{nullptr}, cross_{nullptr};
  FeedForward ff_{nullptr};
  Norm norm_attn_pre_{nullptr}, norm_attn_post_{nullptr};
  Norm norm_cross_pre_{nullptr}, norm_cross_post_{nullptr};
  Norm norm_ff_pre_{nullptr}, norm_ff_post_{nullptr};
};
TORCH_MODULE(Block);

/// A Transformer over a task's vocabulary with pluggable position schemes, in one of the
/// registered architectures (docs/architecture.md):
///   decoder          causal stack, next-token logits at every position;
///   encoder          bidirectional stack with a key-padding mask, a per-position classifier
///                    (the output head applied at every position; the layout says which count);
///   encoder_decoder  bidirectional encoder over the source, causal decoder over the target
///                    with cross-attention to the encoder output.
/// Parameter names (stable; documented in docs/checkpoints.md):
///   tok_emb.weight [V, C] (shared by encoder and decoder); position.<i>.* (scheme i);
///   blocks.<l>.attn.qkv.weight, blocks.<l>.attn.out.weight, blocks.<l>.ff.{up,down}.weight,
///   blocks.<l>.norm_{attn,ff}_{pre,post}.weight (the decoder's blocks, or the encoder's for
///   `encoder`); encoder.<l>.* (encoder_decoder's encoder blocks, same names);
///   blocks.<l>.cross.{q,kv,out}.weight and blocks.<l>.norm_cross_{pre,post}.weight
///   (cross-attention); norm_encoder.weight (encoder_decoder, pre-norm); norm_final.weight;
///   lm_head.weight (absent when tied), lm_head.bias (head_bias); norm_embedding.weight
///   (embedding_norm).
/// Looping (universal Transformers): each stack applies its blocks `loops` times (set_loops
/// changes it at test time); with shared_layers one block per stack is applied `layers`
/// times per loop. Position schemes see one layer index per distinct block (encoder blocks
/// first), whatever the number of loops.
class LENGEN_API TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(ModelConfig cfg,
                  int64_t vocab_size,
                  std::vector<std::shared_ptr<PositionScheme>> schemes);

  /// Logits [B, T, V] for in.tokens ([B, T - in.outputs_from, V]: the last rows). With a cache (decoder, encoder_decoder), tokens/ids are
  /// only the new tokens; cached keys are reused and extended (encoder_decoder: the source is
  /// encoded on the first call and kept in the cache). attention: if non-null, receives one
  /// [B, H, T, S] tensor per attention application, named by attention_names().
  torch::Tensor forward(const ModelInputs& in,
                        KVCache* cache = nullptr,
                        std::vector<torch::Tensor>* attention = nullptr);

  /// Decoder-only shorthand: tokens [B, T], ids [L, B, T] -> logits [B, T, V].
  torch::Tensor forward(const torch::Tensor& tokens,
                        const torch::Tensor& ids,
                        KVCache* cache = nullptr,
                        std::vector<torch::Tensor>* attention = nullptr);

  /// Names of the maps forward() returns in `attention`, in order: "encoder.<l>" (encoder
  /// self), "blocks.<l>" (decoder self, or the encoder's for `encoder`), "blocks.<l>.cross";
  /// with loops > 1 each application is suffixed "@<loop>".
  std::vector<std::string> attention_names() const;

  const ModelConfig& config() const { return cfg_; }
  const Architecture& arch() const { return arch_; }
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
  /// scores (true; analysis of seed 002's attention bias calibration).
  void set_attention_scores(bool scores) { attention_scores_ = scores; }

 private:
  /// Runs `stack` (loops x depth applications) over x. The last application computes only
  /// rows [rows_from, T) (AttentionInputs::rows_from).
  torch::Tensor run_stack(torch::nn::ModuleList& stack,
                          int64_t depth,
                          torch::Tensor x,
                          const AttentionInputs& self,
                          const AttentionInputs& cross,
                          KVCache* cache,
                          bool use_cross_cache,
                          std::vector<torch::Tensor>* attention,
                          size_t attention_offset,
                          int64_t rows_from = 0);
  /// The encoder stack with a loop count per sample (host_loops [B], on the host): a sample's
  /// state stops changing after its own count. With `adaptive`, returns per sample the logits
  /// of its most confident loop (set_adaptive_loops); otherwise the logits after the last loop.
  torch::Tensor run_encoder_per_sample(torch::Tensor x,
                                       const AttentionInputs& self,
                                       const torch::Tensor& host_loops,
                                       const torch::Tensor& labelled,
                                       bool adaptive,
                                       int64_t rows_from);
  torch::Tensor head(torch::Tensor x);
  /// model.init: normal: every Linear and Embedding weight of the core N(0, std), biases 0.
  void init_normal(double std);

  ModelConfig cfg_;
  Architecture arch_;
  int64_t vocab_size_;
  int64_t loops_ = 1;
  int64_t adaptive_extra_ = 0;
  bool attention_scores_ = false;
  std::vector<std::shared_ptr<PositionScheme>> schemes_;
  torch::nn::Embedding tok_emb_{nullptr};
  torch::nn::ModuleList blocks_{nullptr}, encoder_{nullptr};
  Norm norm_final_{nullptr}, norm_encoder_{nullptr}, norm_embedding_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
  torch::nn::Dropout emb_dropout_{nullptr};
};
TORCH_MODULE(Transformer);

}  // namespace lengen
