// Multi-head attention of every kind (causal self, bidirectional self, cross) and the
// position schemes' hooks inside it; the inputs are one AttentionInputs struct.
#include "lengen/model/attention.h"

#include "lengen/core/error.h"
#include "lengen/core/torch_compat.h"

#include <cmath>
#include <limits>

namespace lengen {

void check_position_support(const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                            AttentionKind kind,
                            const std::string& arch) {
  for (size_t i = 0; i < schemes.size(); ++i) {
    // A scheme that only embeds inputs never acts inside attention.
    if (schemes[i]->hooks() == kHookInputEmbedding) {
      continue;
    }
    if (!schemes[i]->supports(kind)) {
      throw Error(
          fmt::format("position[{}] has no meaning in {} attention, which the '{}' "
                      "architecture uses; choose a scheme that supports it (`lengen "
                      "plugins --describe NAME` lists where each applies)",
                      i,
                      attention_kind_name(kind),
                      arch));
    }
  }
}

AttentionImpl::AttentionImpl(const ModelConfig& cfg, int64_t layer, AttentionKind kind)
    : layer_(layer),
      heads_(cfg.heads),
      head_dim_(cfg.head_dim()),
      kind_(kind),
      dropout_(cfg.dropout),
      softmax_eps_(cfg.softmax_eps) {
  const int64_t inner = heads_ * head_dim_;
  auto linear = [&](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(cfg.attention_bias));
  };
  if (kind == AttentionKind::kCross) {
    q_ = register_module("q", linear(cfg.d_model, inner));
    kv_ = register_module("kv", linear(cfg.d_model, 2 * inner));
  } else {
    qkv_ = register_module("qkv", linear(cfg.d_model, 3 * inner));
  }
  out_ = register_module("out", linear(inner, cfg.d_model));
}

namespace {

// Query rows per block when evaluating long sequences (see AttentionImpl::forward).
constexpr int64_t kBlockRows = 256;

// Boolean mask of keys a query may NOT see: key j > offset + query i. [T, S]
torch::Tensor causal_block_mask(int64_t T, int64_t S, int64_t offset, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({T, S}, opts).triu(offset + 1);
}

bool applies(const PositionScheme& s, AttentionKind kind) {
  return kind != AttentionKind::kCross || s.supports(kind);
}

// The IDs scheme i sees in ctx: its query IDs from column ids_from (the rows kept) and its key
// IDs.
void set_scheme_ids(AttentionContext& ctx, const AttentionInputs& in, size_t i, int64_t ids_from) {
  const auto& ids = (*in.query_ids)[i];  // [L', B|1, T]
  ctx.query_ids = ids_from > 0 ? ids.narrow(-1, ids_from, ctx.query_length) : ids;
  ctx.key_ids = (*in.key_ids)[i];
}

// The schemes' additive terms: biases (positions only) and relative logits (q-dependent);
// undefined when none adds one. [B|1, H|1, T, S]
torch::Tensor position_terms(const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                             AttentionKind kind,
                             AttentionContext& ctx,
                             const AttentionInputs& in,
                             int64_t ids_from,
                             const torch::Tensor& q,
                             const torch::Tensor& k) {
  torch::Tensor extra;
  for (size_t i = 0; i < schemes.size(); ++i) {
    const uint32_t h = schemes[i]->hooks();
    if (!(h & (kHookAdditiveBias | kHookRelativeLogits)) || !applies(*schemes[i], kind)) {
      continue;
    }
    set_scheme_ids(ctx, in, i, ids_from);
    if (h & kHookAdditiveBias) {
      auto b = schemes[i]->additive_bias(ctx);  // [B|1, H|1, T, S] or undefined: nothing
      if (b.defined())
        extra = extra.defined() ? extra + b : b;
    }
    if (h & kHookRelativeLogits) {
      auto r = schemes[i]->relative_logits(q, k, ctx);  // [B, H, T, S]
      extra = extra.defined() ? extra + r : r;
    }
  }
  return extra;
}

// Long sequences without gradients (evaluation): query rows block by block, each block
// against only the keys it can see. Never materialises [T, S] scores and skips the masked
// upper triangle (about half the work). Equal to the explicit path (tested).
torch::Tensor blocked_causal_attention(const torch::Tensor& q,
                                       const torch::Tensor& k,
                                       const torch::Tensor& v,
                                       const torch::Tensor& extra,
                                       int64_t offset,
                                       double scale) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const int64_t T = q.size(2);
  const auto qs = q * scale;
  std::vector<torch::Tensor> parts;
  for (int64_t r0 = 0; r0 < T; r0 += kBlockRows) {
    const int64_t rows = std::min(kBlockRows, T - r0), end = offset + r0 + rows;
    auto s = torch::matmul(qs.narrow(2, r0, rows),
                           k.narrow(2, 0, end).transpose(-2, -1));  // [B, H, rows, end]
    if (extra.defined()) {
      s.add_((extra.size(-2) == 1 ? extra : extra.narrow(-2, r0, rows)).narrow(-1, 0, end));
    }
    s.masked_fill_(causal_block_mask(rows, end, offset + r0, q.device()), neg_inf);
    parts.push_back(torch::matmul(torch::softmax(s, -1), v.narrow(2, 0, end)));  // [B, H, rows, D]
  }
  return torch::cat(parts, 2);  // [B, H, T, D]
}

// The fused kernel. Causal rows from 0 without a bias: the kernel's own causal mask (flash). A
// bias, or causal rows that start at an offset (a KV cache, rows_from): one mask for it.
torch::Tensor fused_attention(const torch::Tensor& q,
                              const torch::Tensor& k,
                              const torch::Tensor& v,
                              const torch::Tensor& extra,
                              bool causal,
                              int64_t offset,
                              double p,
                              double scale) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const int64_t T = q.size(2), S = k.size(2);
  torch::Tensor mask = extra.defined() ? extra.to(q.scalar_type()) : extra;
  bool is_causal = false;
  if (causal && T > 1) {
    if (!mask.defined() && offset == 0) {
      is_causal = true;
    } else {
      auto hidden = causal_block_mask(T, S, offset, q.device());  // [T, S]
      mask = mask.defined() ? mask.masked_fill(hidden, neg_inf) : hidden.logical_not();
    }
  }
  return compat::fused_attention(q, k, v, mask, is_causal, p, scale);  // [B, H, T, D]
}

}  // namespace

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const AttentionInputs& in) {
  const int64_t B = x.size(0);
  int64_t T = x.size(1);
  static const std::vector<std::shared_ptr<PositionScheme>> kNone;
  const auto& schemes = in.schemes ? *in.schemes : kNone;
  const bool cross = kind_ == AttentionKind::kCross;
  const int64_t rows_from = in.rows_from;
  LENGEN_CHECK(rows_from == 0 || (!cross && in.cache_k == nullptr && rows_from < T),
               "internal: rows_from {} needs self-attention without a cache over more than {} "
               "rows (got {})",
               rows_from,
               rows_from,
               T);
  for (const auto& s : schemes) {
    LENGEN_CHECK(cross || s->hooks() == kHookInputEmbedding || s->supports(kind_),
                 "internal: a position scheme was called for {} attention, which it does not "
                 "support (check_position_support not called)",
                 attention_kind_name(kind_));
  }
  torch::Tensor q, k, v;
  int64_t offset = 0;
  project(x, in, q, k, v, offset);
  const bool cached = in.cache_k && in.cache_k->defined();
  AttentionContext ctx;
  ctx.kind = kind_;
  ctx.layer = layer_;
  ctx.heads = heads_;
  ctx.head_dim = head_dim_;
  ctx.query_length = T;
  ctx.key_length = cross ? k.size(2) : offset + T;
  ctx.cache_offset = offset;
  ctx.query_offset = cross ? in.query_offset : offset;
  ctx.key_padding = in.key_padding;
  ctx.training = is_training();
  int64_t ids_from = 0;  // the first query row's column in query_ids (rows_from once narrowed)

  // Cross keys are cached as projected (every call transforms them again with the queries).
  if (cross && in.cache_k && !cached) {
    *in.cache_k = k;
    *in.cache_v = v;
  }
  // q/k transforms act on the new self-attention keys only; cached ones are stored
  // transformed.
  for (size_t i = 0; i < schemes.size(); ++i) {
    if ((schemes[i]->hooks() & kHookQKTransform) && applies(*schemes[i], kind_)) {
      set_scheme_ids(ctx, in, i, ids_from);
      std::tie(q, k) = schemes[i]->transform_qk(q, k, ctx);
    }
  }
  if (!cross && in.cache_k) {
    if (cached) {
      k = torch::cat({*in.cache_k, k}, 2);  // [B, H, S, D]
      v = torch::cat({*in.cache_v, v}, 2);  // [B, H, S, D]
    }
    *in.cache_k = k;
    *in.cache_v = v;
  }
  if (rows_from > 0) {
    // Only rows [rows_from, T) are wanted: from here on the queries are those rows, as if
    // the keys before them had been cached (the schemes' terms see query_offset rows_from).
    T -= rows_from;
    q = q.narrow(2, rows_from, T);  // [B, H, T', D]
    offset = rows_from;
    ids_from = rows_from;
    ctx.query_length = T;
    ctx.cache_offset = ctx.query_offset = rows_from;
  }
  const int64_t S = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  const bool causal = kind_ == AttentionKind::kCausalSelf;
  const double neg_inf = -std::numeric_limits<double>::infinity();

  // Additive terms: the schemes' biases (positions only) and relative logits (q-dependent),
  // then the key-padding mask.
  torch::Tensor extra = position_terms(schemes, kind_, ctx, in, ids_from, q, k);
  if (in.key_padding.defined()) {
    auto pad = torch::zeros({B, 1, 1, S}, q.options())
                   .masked_fill_(in.key_padding.view({B, 1, 1, S}), neg_inf);  // [B, 1, 1, S]
    extra = extra.defined() ? extra + pad : pad;
  }
  if (in.other_sample.defined()) {
    LENGEN_CHECK(!cross && in.cache_k == nullptr && in.other_sample.size(-1) == S,
                 "internal: packed rows in {} attention over {} keys",
                 attention_kind_name(kind_),
                 S);
    const auto& other = rows_from > 0 ? in.other_sample.narrow(2, rows_from, T) : in.other_sample;
    auto apart =
        torch::zeros({B, 1, T, S}, q.options()).masked_fill_(other, neg_inf);  // [B, 1, T, S]
    extra = extra.defined() ? extra + apart : apart;
  }

  bool value_hooks = false;
  for (const auto& s : schemes) {
    value_hooks = value_hooks || ((s->hooks() & kHookRelativeValues) && applies(*s, kind_));
  }

  const double p = is_training() ? dropout_ : 0.0;
  torch::Tensor y;
  const bool exact_softmax = softmax_eps_ == 0.0;  // else only the explicit path adds eps
  if (compat::kHasSdpa && !value_hooks && in.attn_out == nullptr && exact_softmax) {
    y = fused_attention(q, k, v, extra, causal, offset, p, scale);  // [B, H, T, D]
  }
  if (!y.defined() && causal && T > kBlockRows && !torch::GradMode::is_enabled() && !value_hooks &&
      in.attn_out == nullptr && exact_softmax) {
    y = blocked_causal_attention(q, k, v, extra, offset, scale);  // [B, H, T, D]
  }
  if (!y.defined()) {
    y = explicit_attention(q, k, v, extra, offset, in, ctx, ids_from);  // [B, H, T, D]
  }
  if (in.probe) {
    y = in.probe->visit(in.site + ".heads", y);  // [B, H, T, D]
  }
  y = y.transpose(1, 2).reshape({B, T, heads_ * head_dim_});  // [B, T, H*D]
  return out_(y);                                             // [B, T, C]
}

void AttentionImpl::project(const torch::Tensor& x,
                            const AttentionInputs& in,
                            torch::Tensor& q,
                            torch::Tensor& k,
                            torch::Tensor& v,
                            int64_t& offset) {
  const int64_t B = x.size(0), T = x.size(1);
  const bool cached = in.cache_k && in.cache_k->defined();
  if (kind_ == AttentionKind::kCross) {
    q = q_(x).view({B, T, heads_, head_dim_}).transpose(1, 2);  // [B, H, T, D]
    if (cached) {
      k = *in.cache_k;  // [B, H, S, D]
      v = *in.cache_v;
    } else {
      LENGEN_CHECK(in.memory.defined(), "internal: cross-attention without an encoder output");
      const int64_t S = in.memory.size(1);
      auto kv = kv_(in.memory)                           // [B, S, 2*H*D]
                    .view({B, S, 2, heads_, head_dim_})  // [B, S, 2, H, D]
                    .permute({2, 0, 3, 1, 4});           // [2, B, H, S, D]
      auto kv_parts = kv.unbind(0);  // one gradient kernel (stack), not one per part
      k = kv_parts[0];
      v = kv_parts[1];
    }
  } else {
    auto qkv = qkv_(x)                                  // [B, T, 3*H*D]
                   .view({B, T, 3, heads_, head_dim_})  // [B, T, 3, H, D]
                   .permute({2, 0, 3, 1, 4});           // [3, B, H, T, D]
    auto parts = qkv.unbind(0);                // one gradient kernel (stack), not one per part
    q = parts[0], k = parts[1], v = parts[2];  // [B, H, T, D]
    offset = cached ? in.cache_k->size(2) : 0;
  }
}

torch::Tensor AttentionImpl::explicit_attention(const torch::Tensor& q,
                                                const torch::Tensor& k,
                                                const torch::Tensor& v,
                                                const torch::Tensor& extra,
                                                int64_t offset,
                                                const AttentionInputs& in,
                                                AttentionContext& ctx,
                                                int64_t ids_from) {
  static const std::vector<std::shared_ptr<PositionScheme>> kNone;
  const auto& schemes = in.schemes ? *in.schemes : kNone;
  const int64_t T = q.size(2), S = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const bool causal = kind_ == AttentionKind::kCausalSelf;
  const bool exact_softmax = softmax_eps_ == 0.0;
  const double p = is_training() ? dropout_ : 0.0;
  // In-place steps are safe under autograd: matmul and add keep no outputs for backward.
  auto scores =
      torch::matmul(q * scale, k.transpose(-2, -1));  // [B, H, T, D] x [B, H, D, S] -> [B, H, T, S]
  if (extra.defined()) {
    scores.add_(extra);  // broadcast [B|1, H|1, T, S]
  }
  if (causal) {
    scores.masked_fill_(causal_block_mask(T, S, offset, q.device()), neg_inf);
  }
  if (in.attn_out && in.scores) {
    *in.attn_out = scores.detach().clone();
  }
  torch::Tensor probs;
  if (exact_softmax) {
    probs = torch::softmax(scores, -1);  // [B, H, T, S]
  } else {
    // TAOTP's Figure 1.1: exp(s - max) / (sum exp(s - max) + eps).
    auto e = (scores - std::get<0>(scores.max(-1, /*keepdim=*/true))).exp();  // [B, H, T, S]
    probs = e / (e.sum(-1, /*keepdim=*/true) + softmax_eps_);                 // [B, H, T, S]
  }
  if (in.attn_out && !in.scores) {
    *in.attn_out = probs.detach();
  }
  if (p > 0) {
    probs = torch::dropout(probs, p, /*train=*/true);
  }
  auto y = torch::matmul(probs, v);  // [B, H, T, S] x [B, H, S, D] -> [B, H, T, D]
  for (size_t i = 0; i < schemes.size(); ++i) {
    if ((schemes[i]->hooks() & kHookRelativeValues) && applies(*schemes[i], kind_)) {
      set_scheme_ids(ctx, in, i, ids_from);
      y = y + schemes[i]->relative_values(probs, ctx);  // [B, H, T, D]
    }
  }
  return y;
}

}  // namespace lengen
