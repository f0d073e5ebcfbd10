#pragma once

#include "lengen/config/node.h"
#include "lengen/core/export.h"
#include "lengen/position/scheme.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// The model section of an experiment. Every field is a YAML key of `model:`; the key `bias`
/// sets attention_bias and ff_bias together.
struct LENGEN_API ModelConfig {
  std::string arch = "decoder";        ///< decoder (encoder / encoder_decoder come later)
  int64_t layers = 2;                  ///< 0 is allowed (embeddings, final norm, output only)
  int64_t heads = 4;
  int64_t d_model = 128;               ///< C
  int64_t d_head = 0;                  ///< D; 0 means d_model / heads
  int64_t d_ff = 512;                  ///< hidden width of the feed-forward (per gate input)
  std::string norm = "layernorm";      ///< layernorm | rmsnorm | taotp_layernorm (eps on the std)
  std::string norm_position = "pre";   ///< pre | post | pre_post
  std::string activation = "gelu";     ///< relu | gelu | geglu | swiglu
  double dropout = 0.0;
  double norm_eps = 1e-5;
  bool attention_bias = false;         ///< biases in the q/k/v and output projections
  bool ff_bias = false;                ///< biases in the feed-forward projections
  bool tie_embeddings = false;         ///< LM head shares the token embedding
  bool shared_layers = false;          ///< universal transformer: one block applied `layers` times

  /// Reads and validates the `model:` map (unknown keys, ranges, choices).
  static ModelConfig from_config(const ConfigNode& node);
  YAML::Node to_yaml() const;
  int64_t head_dim() const { return d_head > 0 ? d_head : d_model / heads; }
};

/// Keys and values cached for incremental decoding, one entry per layer, plus the raw
/// position IDs of every cached token (schemes need them for bias rows).
struct LENGEN_API KVCache {
  std::vector<torch::Tensor> keys;    ///< per layer [B, H, S, D] (after any q/k transform)
  std::vector<torch::Tensor> values;  ///< per layer [B, H, S, D]
  torch::Tensor ids;                  ///< [L, B, S] task IDs of cached tokens
  int64_t length() const { return ids.defined() ? ids.size(2) : 0; }
  void clear() {
    keys.clear();
    values.clear();
    ids = torch::Tensor();
  }
};

/// RMSNorm (Zhang & Sennrich 2019) or LayerNorm over the last dimension.
/// Parameters: weight [C]; bias [C] for layernorm.
class LENGEN_API NormImpl : public torch::nn::Module {
 public:
  NormImpl(const std::string& kind, int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // [..., C] -> [..., C]

 private:
  bool rms_;
  bool eps_on_std_;
  double eps_;
  torch::Tensor weight_, bias_;
};
TORCH_MODULE(Norm);

/// Fails (lengen::Error) naming the scheme's position in `position:` and the attention kind
/// when a scheme has no meaning in that kind of attention (PositionScheme::supports), which
/// the architecture `arch` uses. Called when a model is built, before any training.
LENGEN_API void check_position_support(const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                                       AttentionKind kind,
                                       const std::string& arch);

/// Multi-head attention that calls the position schemes' hooks. Self-attention (causal or
/// bidirectional) and cross-attention share this class; the AttentionKind decides masking and
/// which hooks apply. Parameters: qkv.weight [3*H*D, C] (rows: q, then k, then v), out.weight
/// [C, H*D].
class LENGEN_API AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& cfg, int64_t layer, AttentionKind kind);

  /// x [B, T, C]; ids: per scheme, transformed IDs of the queries [L', B, T] and keys
  /// [L', B, S] (S = cache + T). cache_k/cache_v: this layer's cache entry (updated in
  /// place) or nullptr. attn_out: receives the attention weights [B, H, T, S] if non-null.
  torch::Tensor forward(const torch::Tensor& x,
                        const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                        const std::vector<torch::Tensor>& query_ids,
                        const std::vector<torch::Tensor>& key_ids,
                        torch::Tensor* cache_k,
                        torch::Tensor* cache_v,
                        torch::Tensor* attn_out);

 private:
  int64_t layer_, heads_, head_dim_;
  AttentionKind kind_;
  double dropout_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr};
};
TORCH_MODULE(Attention);

/// Feed-forward: relu/gelu `down(act(up(x)))`, or gated geglu/swiglu
/// `down(act(gate(x)) * up(x))` with gate and up fused in up.weight [2*d_ff, C] (gate rows
/// first).
class LENGEN_API FeedForwardImpl : public torch::nn::Module {
 public:
  explicit FeedForwardImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] -> [B, T, C]

 private:
  std::string activation_;
  bool gated_;
  torch::nn::Linear up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(FeedForward);

/// One Transformer block with pre-, post- or pre+post normalisation (models.md §1.2).
class LENGEN_API BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, int64_t layer);
  torch::Tensor forward(const torch::Tensor& x,
                        const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                        const std::vector<torch::Tensor>& query_ids,
                        const std::vector<torch::Tensor>& key_ids,
                        torch::Tensor* cache_k,
                        torch::Tensor* cache_v,
                        torch::Tensor* attn_out);

 private:
  bool pre_, post_;
  double dropout_;
  Attention attn_{nullptr};
  FeedForward ff_{nullptr};
  Norm norm_attn_pre_{nullptr}, norm_attn_post_{nullptr};
  Norm norm_ff_pre_{nullptr}, norm_ff_post_{nullptr};
};
TORCH_MODULE(Block);

/// Decoder-only Transformer language model over a task's vocabulary with pluggable
/// position schemes. Parameter names (stable; documented in docs/checkpoints.md):
///   tok_emb.weight [V, C]; position.<i>.* (scheme i's parameters);
///   blocks.<l>.attn.qkv.weight, blocks.<l>.attn.out.weight, blocks.<l>.ff.up.weight,
///   blocks.<l>.ff.down.weight, blocks.<l>.norm_{attn,ff}_{pre,post}.weight;
///   norm_final.weight; lm_head.weight (absent when tied).
class LENGEN_API TransformerImpl : public torch::nn::Module {
 public:
  TransformerImpl(ModelConfig cfg,
                  int64_t vocab_size,
                  std::vector<std::shared_ptr<PositionScheme>> schemes);

  /// tokens [B, T] int64, ids [L, B, T] int64 -> logits [B, T, V].
  /// With a cache, tokens/ids are only the new tokens; cached keys are reused and extended.
  /// attention: if non-null, receives one [B, H, T, S] tensor per layer.
  torch::Tensor forward(const torch::Tensor& tokens,
                        const torch::Tensor& ids,
                        KVCache* cache = nullptr,
                        std::vector<torch::Tensor>* attention = nullptr);

  const ModelConfig& config() const { return cfg_; }
  const std::vector<std::shared_ptr<PositionScheme>>& schemes() const { return schemes_; }
  int64_t vocab_size() const { return vocab_size_; }
  /// Number of trainable scalars.
  int64_t parameter_count() const;

 private:
  ModelConfig cfg_;
  int64_t vocab_size_;
  std::vector<std::shared_ptr<PositionScheme>> schemes_;
  torch::nn::Embedding tok_emb_{nullptr};
  torch::nn::ModuleList blocks_{nullptr};
  Norm norm_final_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
  torch::nn::Dropout emb_dropout_{nullptr};
};
TORCH_MODULE(Transformer);

}  // namespace lengen
