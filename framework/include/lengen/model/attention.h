#pragma once

// Multi-head attention that calls the position schemes' hooks (causal self-, bidirectional self-
// and cross-attention), what one call needs, and the check that every scheme has a meaning in
// the attention kinds an architecture uses. src/model/attention.cpp.

#include "lengen/core/export.h"
#include "lengen/model/config.h"
#include "lengen/position/scheme.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// Looking inside a forward pass, and changing it (lengen's Python API: capture and
/// interventions; TransformerImpl::set_probe). `visit` is called with a site name and the
/// tensor there, and returns what the pass goes on with (the same tensor, or a changed one):
///   "<stack>.<l>[.cross].heads"  each attention's head outputs before they are merged and
///                                projected, [B, H, T, D];
///   "<stack>.<l>"                each block's output, the residual stream, [B, T, C];
/// <stack> and the "@<loop>" suffix as in TransformerImpl::attention_names(). Unset: the pass
/// pays one branch per block.
struct LENGEN_API ModelProbe {
  std::function<torch::Tensor(const std::string& site, const torch::Tensor& value)> visit;
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
  torch::Tensor key_padding;  ///< [B, S] bool, true on keys nobody may attend to
  /// Packed rows: [B, 1, T, S] bool, true where query and key belong to different samples of
  /// the row (masked like padding); undefined: none.
  torch::Tensor other_sample;
  torch::Tensor memory;      ///< cross-attention: the encoder output [B, S, C]
  int64_t query_offset = 0;  ///< decoder: tokens cached before this call (AttentionContext)
  /// Self-attention without a cache: outputs only for query rows [rows_from, T) (keys and
  /// values still from every row); the result is [B, T - rows_from, C]. The schemes see
  /// those rows as queries at query_offset rows_from, as in cached decoding.
  int64_t rows_from = 0;
  torch::Tensor* cache_k = nullptr;  ///< this application's cache slot (updated in place)
  torch::Tensor* cache_v = nullptr;
  torch::Tensor* attn_out = nullptr;  ///< receives the attention weights [B, H, T, S]
  /// attn_out receives the pre-softmax scores instead (scaled q.k plus the schemes' biases,
  /// -inf where masked).
  bool scores = false;
  /// Inspection (ModelProbe): the head outputs are shown to `probe` as site `site`.heads.
  const ModelProbe* probe = nullptr;
  std::string site;
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
  /// The projections: q [B, H, T, D], and the keys and values (cross-attention: of the encoder's
  /// output, or the cached ones); `offset` is the number of cached self-attention keys.
  void project(const torch::Tensor& x,
               const AttentionInputs& in,
               torch::Tensor& q,
               torch::Tensor& k,
               torch::Tensor& v,
               int64_t& offset);
  /// The weights-and-values path over [T, S] scores (what the fused and blocked paths skip:
  /// relative values, the attention maps, TAOTP's softmax epsilon, dropout): -> [B, H, T, D].
  torch::Tensor explicit_attention(const torch::Tensor& q,
                                   const torch::Tensor& k,
                                   const torch::Tensor& v,
                                   const torch::Tensor& extra,
                                   int64_t offset,
                                   const AttentionInputs& in,
                                   AttentionContext& ctx,
                                   int64_t ids_from);
  int64_t layer_, heads_, head_dim_;
  AttentionKind kind_;
  double dropout_;
  double softmax_eps_;
  torch::nn::Linear qkv_{nullptr}, q_{nullptr}, kv_{nullptr}, out_{nullptr};
};

TORCH_MODULE(Attention);

}  // namespace lengen
