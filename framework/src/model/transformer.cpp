#include "lengen/model/transformer.h"

#include "lengen/core/error.h"
#include "lengen/core/torch_compat.h"

#include <cmath>
#include <limits>

namespace lengen {

// ---------------------------------------------------------------------------------------
// Config

ModelConfig ModelConfig::from_config(const ConfigNode& node) {
  ModelConfig c;
  MapReader r(node);
  c.arch = r.get_choice("arch", c.arch, {"decoder"});
  c.layers = r.get_int("layers", c.layers);
  c.heads = r.get_int("heads", c.heads);
  c.d_model = r.get_int("d_model", c.d_model);
  c.d_head = r.get_int("d_head", c.d_head);
  c.d_ff = r.get_int("d_ff", c.d_ff);
  c.norm = r.get_choice("norm", c.norm, {"layernorm", "rmsnorm", "taotp_layernorm"});
  c.norm_position = r.get_choice("norm_position", c.norm_position, {"pre", "post", "pre_post"});
  c.activation = r.get_choice("activation", c.activation, {"relu", "gelu", "geglu", "swiglu"});
  c.dropout = r.get_float("dropout", c.dropout);
  c.norm_eps = r.get_float("norm_eps", c.norm_eps);
  // `bias` is YAML shorthand for both; the specific keys win.
  const bool bias = r.get_bool("bias", false);
  c.attention_bias = r.get_bool("attention_bias", bias);
  c.ff_bias = r.get_bool("ff_bias", bias);
  c.tie_embeddings = r.get_bool("tie_embeddings", c.tie_embeddings);
  c.shared_layers = r.get_bool("shared_layers", c.shared_layers);
  r.finish();
  auto positive = [&](const char* key, int64_t v) {
    if (v < 1) {
      node.child(key).fail(fmt::format("model.{} must be at least 1, got {}", key, v));
    }
  };
  if (c.layers < 0) {
    node.child("layers").fail(fmt::format("model.layers must be >= 0, got {}", c.layers));
  }
  positive("heads", c.heads);
  positive("d_model", c.d_model);
  if (c.d_ff < 0) {
    node.child("d_ff").fail("model.d_ff must be >= 0 (0 = attention-only blocks)");
  }
  if (c.d_head < 0) {
    node.child("d_head").fail("model.d_head must be >= 0 (0 = d_model / heads)");
  }
  if (c.d_head == 0 && c.d_model % c.heads != 0) {
    node.child("heads").fail(fmt::format(
        "d_model {} is not divisible by heads {}; set model.d_head explicitly", c.d_model, c.heads));
  }
  if (c.dropout < 0 || c.dropout >= 1) {
    node.child("dropout").fail(fmt::format("model.dropout must be in [0, 1), got {}", c.dropout));
  }
  return c;
}

YAML::Node ModelConfig::to_yaml() const {
  YAML::Node n;
  n["arch"] = arch;
  n["layers"] = layers;
  n["heads"] = heads;
  n["d_model"] = d_model;
  n["d_head"] = head_dim();
  n["d_ff"] = d_ff;
  n["norm"] = norm;
  n["norm_position"] = norm_position;
  n["activation"] = activation;
  n["dropout"] = dropout;
  n["norm_eps"] = norm_eps;
  n["attention_bias"] = attention_bias;
  n["ff_bias"] = ff_bias;
  n["tie_embeddings"] = tie_embeddings;
  n["shared_layers"] = shared_layers;
  return n;
}

// ---------------------------------------------------------------------------------------
// Norm

NormImpl::NormImpl(const std::string& kind, int64_t dim, double eps)
    : rms_(kind == "rmsnorm"), eps_on_std_(kind == "taotp_layernorm"), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
  if (!rms_) {
    bias_ = register_parameter("bias", torch::zeros({dim}));
  }
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (rms_) {
    auto inv = torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps_);  // [..., 1]
    return x * inv * weight_;                                             // [..., C]
  }
  if (eps_on_std_) {
    // TAOTP (Figure 1.1): population standard deviation, epsilon added to it.
    auto centred = x - x.mean(-1, /*keepdim=*/true);                                // [..., C]
    auto std = centred.pow(2).mean(-1, /*keepdim=*/true).sqrt();                     // [..., 1]
    return centred / (std + eps_) * weight_ + bias_;                                 // [..., C]
  }
  return torch::layer_norm(x, {x.size(-1)}, weight_, bias_, eps_);
}

// ---------------------------------------------------------------------------------------
// Attention

void check_position_support(const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                            AttentionKind kind,
                            const std::string& arch) {
  for (size_t i = 0; i < schemes.size(); ++i) {
    if (!schemes[i]->supports(kind)) {
      throw Error(fmt::format("position[{}] has no meaning in {} attention, which the '{}' "
                              "architecture uses; choose a scheme that supports it (`lengen "
                              "plugins --describe NAME` lists where each applies)",
                              i, attention_kind_name(kind), arch));
    }
  }
}

AttentionImpl::AttentionImpl(const ModelConfig& cfg, int64_t layer, AttentionKind kind)
    : layer_(layer),
      heads_(cfg.heads),
      head_dim_(cfg.head_dim()),
      kind_(kind),
      dropout_(cfg.dropout) {
  const int64_t inner = heads_ * head_dim_;
  qkv_ = register_module(
      "qkv", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_model, 3 * inner).bias(cfg.attention_bias)));
  out_ = register_module(
      "out", torch::nn::Linear(torch::nn::LinearOptions(inner, cfg.d_model).bias(cfg.attention_bias)));
}

namespace {

// Boolean mask of keys a query may NOT see: key j > offset + query i. [T, S]
// Query rows per block when evaluating long sequences (see AttentionImpl::forward).
constexpr int64_t kBlockRows = 256;

torch::Tensor causal_block_mask(int64_t T, int64_t S, int64_t offset, const torch::Device& device) {
  auto opts = torch::TensorOptions().dtype(torch::kBool).device(device);
  return torch::ones({T, S}, opts).triu(offset + 1);
}

}  // namespace

torch::Tensor AttentionImpl::forward(const torch::Tensor& x,
                                     const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                                     const std::vector<torch::Tensor>& query_ids,
                                     const std::vector<torch::Tensor>& key_ids,
                                     torch::Tensor* cache_k,
                                     torch::Tensor* cache_v,
                                     torch::Tensor* attn_out) {
  const int64_t B = x.size(0), T = x.size(1);
  for (const auto& s : schemes) {
    LENGEN_CHECK(s->supports(kind_), "internal: a position scheme was called for {} attention, "
                 "which it does not support (check_position_support not called)",
                 attention_kind_name(kind_));
  }
  auto qkv = qkv_(x)                                     // [B, T, 3*H*D]
                 .view({B, T, 3, heads_, head_dim_})     // [B, T, 3, H, D]
                 .permute({2, 0, 3, 1, 4});              // [3, B, H, T, D]
  torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];      // [B, H, T, D]

  const int64_t offset = (cache_k && cache_k->defined()) ? cache_k->size(2) : 0;
  AttentionContext ctx;
  ctx.kind = kind_;
  ctx.layer = layer_;
  ctx.heads = heads_;
  ctx.head_dim = head_dim_;
  ctx.query_length = T;
  ctx.key_length = offset + T;
  ctx.cache_offset = offset;
  ctx.training = is_training();

  // q/k transforms act on the new keys only; cached keys are stored transformed.
  for (size_t i = 0; i < schemes.size(); ++i) {
    if (schemes[i]->hooks() & kHookQKTransform) {
      ctx.query_ids = query_ids[i];
      ctx.key_ids = key_ids[i];
      std::tie(q, k) = schemes[i]->transform_qk(q, k, ctx);
    }
  }
  if (cache_k) {
    if (cache_k->defined()) {
      k = torch::cat({*cache_k, k}, 2);  // [B, H, S, D]
      v = torch::cat({*cache_v, v}, 2);  // [B, H, S, D]
    }
    *cache_k = k;
    *cache_v = v;
  }
  const int64_t S = k.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  const bool causal = kind_ == AttentionKind::kCausalSelf;

  // Additive terms from the schemes: biases depend on positions only, relative logits on q.
  torch::Tensor extra;
  for (size_t i = 0; i < schemes.size(); ++i) {
    const uint32_t h = schemes[i]->hooks();
    if (!(h & (kHookAdditiveBias | kHookRelativeLogits))) {
      continue;
    }
    ctx.query_ids = query_ids[i];
    ctx.key_ids = key_ids[i];
    if (h & kHookAdditiveBias) {
      auto b = schemes[i]->additive_bias(ctx);  // [B|1, H|1, T, S]
      extra = extra.defined() ? extra + b : b;
    }
    if (h & kHookRelativeLogits) {
      auto r = schemes[i]->relative_logits(q, k, ctx);  // [B, H, T, S]
      extra = extra.defined() ? extra + r : r;
    }
  }

  bool value_hooks = false;
  for (const auto& s : schemes) {
    value_hooks = value_hooks || (s->hooks() & kHookRelativeValues);
  }

  const double p = is_training() ? dropout_ : 0.0;
  torch::Tensor y;
  if (!extra.defined() && !value_hooks && attn_out == nullptr) {
    y = compat::fused_attention(q, k, v, causal, offset, p, scale);  // [B, H, T, D] or undefined
  }
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (!y.defined() && causal && T > kBlockRows && !torch::GradMode::is_enabled() && !value_hooks &&
      attn_out == nullptr) {
    // Long sequences without gradients (evaluation): query rows block by block, each block
    // against only the keys it can see. Never materialises [T, S] scores and skips the masked
    // upper triangle (about half the work). Equal to the path below (tested).
    const auto qs = q * scale;
    std::vector<torch::Tensor> parts;
    for (int64_t r0 = 0; r0 < T; r0 += kBlockRows) {
      const int64_t rows = std::min(kBlockRows, T - r0), end = offset + r0 + rows;
      auto s = torch::matmul(qs.narrow(2, r0, rows), k.narrow(2, 0, end).transpose(-2, -1));  // [B, H, rows, end]
      if (extra.defined()) {
        s.add_((extra.size(-2) == 1 ? extra : extra.narrow(-2, r0, rows)).narrow(-1, 0, end));
      }
      s.masked_fill_(causal_block_mask(rows, end, offset + r0, x.device()), neg_inf);
      parts.push_back(torch::matmul(torch::softmax(s, -1), v.narrow(2, 0, end)));  // [B, H, rows, D]
    }
    y = torch::cat(parts, 2);  // [B, H, T, D]
  }
  if (!y.defined()) {
    // In-place steps are safe under autograd: matmul and add keep no outputs for backward.
    auto scores = torch::matmul(q * scale, k.transpose(-2, -1));  // [B, H, T, D] x [B, H, D, S] -> [B, H, T, S]
    if (extra.defined()) {
      scores.add_(extra);  // broadcast [B|1, H|1, T, S]
    }
    if (causal) {
      scores.masked_fill_(causal_block_mask(T, S, offset, x.device()), neg_inf);
    }
    auto probs = torch::softmax(scores, -1);  // [B, H, T, S]
    if (attn_out) {
      *attn_out = probs.detach();
    }
    if (p > 0) {
      probs = torch::dropout(probs, p, /*train=*/true);
    }
    y = torch::matmul(probs, v);  // [B, H, T, S] x [B, H, S, D] -> [B, H, T, D]
    for (size_t i = 0; i < schemes.size(); ++i) {
      if (schemes[i]->hooks() & kHookRelativeValues) {
        ctx.query_ids = query_ids[i];
        ctx.key_ids = key_ids[i];
        y = y + schemes[i]->relative_values(probs, ctx);  // [B, H, T, D]
      }
    }
  }
  y = y.transpose(1, 2).reshape({B, T, heads_ * head_dim_});  // [B, T, H*D]
  return out_(y);                                            // [B, T, C]
}

// ---------------------------------------------------------------------------------------
// Feed-forward

FeedForwardImpl::FeedForwardImpl(const ModelConfig& cfg)
    : activation_(cfg.activation), gated_(cfg.activation == "geglu" || cfg.activation == "swiglu") {
  const int64_t up_width = gated_ ? 2 * cfg.d_ff : cfg.d_ff;
  up_ = register_module(
      "up", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_model, up_width).bias(cfg.ff_bias)));
  down_ = register_module(
      "down", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_ff, cfg.d_model).bias(cfg.ff_bias)));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = up_(x);  // [B, T, F] or [B, T, 2F]
  if (gated_) {
    auto parts = h.chunk(2, -1);  // gate [B, T, F], linear [B, T, F]
    auto gate = activation_ == "geglu" ? torch::gelu(parts[0]) : torch::silu(parts[0]);
    h = gate * parts[1];  // [B, T, F]
  } else {
    h = activation_ == "relu" ? torch::relu(h) : torch::gelu(h);
  }
  return down_(h);  // [B, T, C]
}

// ---------------------------------------------------------------------------------------
// Block

BlockImpl::BlockImpl(const ModelConfig& cfg, int64_t layer)
    : pre_(cfg.norm_position != "post"),
      post_(cfg.norm_position != "pre"),
      dropout_(cfg.dropout) {
  attn_ = register_module("attn", Attention(cfg, layer, AttentionKind::kCausalSelf));
  if (cfg.d_ff > 0) {
    ff_ = register_module("ff", FeedForward(cfg));
  }
  if (pre_) {
    norm_attn_pre_ = register_module("norm_attn_pre", Norm(cfg.norm, cfg.d_model, cfg.norm_eps));
    if (ff_) {
      norm_ff_pre_ = register_module("norm_ff_pre", Norm(cfg.norm, cfg.d_model, cfg.norm_eps));
    }
  }
  if (post_) {
    norm_attn_post_ = register_module("norm_attn_post", Norm(cfg.norm, cfg.d_model, cfg.norm_eps));
    if (ff_) {
      norm_ff_post_ = register_module("norm_ff_post", Norm(cfg.norm, cfg.d_model, cfg.norm_eps));
    }
  }
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x_in,
                                 const std::vector<std::shared_ptr<PositionScheme>>& schemes,
                                 const std::vector<torch::Tensor>& query_ids,
                                 const std::vector<torch::Tensor>& key_ids,
                                 torch::Tensor* cache_k,
                                 torch::Tensor* cache_v,
                                 torch::Tensor* attn_out) {
  const double p = is_training() ? dropout_ : 0.0;
  torch::Tensor x = x_in;  // [B, T, C]
  auto a = attn_(pre_ ? norm_attn_pre_(x) : x, schemes, query_ids, key_ids, cache_k, cache_v,
                 attn_out);
  x = x + (p > 0 ? torch::dropout(a, p, true) : a);
  if (post_) {
    x = norm_attn_post_(x);
  }
  if (ff_) {
    auto f = ff_(pre_ ? norm_ff_pre_(x) : x);
    x = x + (p > 0 ? torch::dropout(f, p, true) : f);
    if (post_) {
      x = norm_ff_post_(x);
    }
  }
  return x;
}

// ---------------------------------------------------------------------------------------
// Transformer

TransformerImpl::TransformerImpl(ModelConfig cfg,
                                 int64_t vocab_size,
                                 std::vector<std::shared_ptr<PositionScheme>> schemes)
    : cfg_(std::move(cfg)), vocab_size_(vocab_size), schemes_(std::move(schemes)) {
  check_position_support(schemes_, AttentionKind::kCausalSelf, cfg_.arch);
  tok_emb_ = register_module("tok_emb", torch::nn::Embedding(vocab_size, cfg_.d_model));
  auto plist = torch::nn::ModuleList();
  for (auto& s : schemes_) {
    plist->push_back(s);
  }
  register_module("position", plist);
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  const int64_t distinct = cfg_.shared_layers ? 1 : cfg_.layers;
  for (int64_t l = 0; l < distinct; ++l) {
    blocks_->push_back(Block(cfg_, l));
  }
  if (cfg_.norm_position != "post") {
    norm_final_ = register_module("norm_final", Norm(cfg_.norm, cfg_.d_model, cfg_.norm_eps));
  }
  if (!cfg_.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(cfg_.d_model, vocab_size).bias(false)));
  }
  emb_dropout_ = register_module("emb_dropout", torch::nn::Dropout(cfg_.dropout));
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens,
                                       const torch::Tensor& ids,
                                       KVCache* cache,
                                       std::vector<torch::Tensor>* attention) {
  const bool train = is_training();
  // All key IDs: cached tokens' then the new ones. [L, B, S]
  torch::Tensor all_ids =
      (cache && cache->ids.defined()) ? torch::cat({cache->ids, ids}, 2) : ids;
  std::vector<torch::Tensor> q_ids(schemes_.size()), k_ids(schemes_.size());
  auto x = tok_emb_(tokens);  // [B, T, C]
  const int64_t offset = cache ? cache->length() : 0;
  for (size_t i = 0; i < schemes_.size(); ++i) {
    q_ids[i] = schemes_[i]->transform_ids(ids, offset, train);  // [L', B, T]
    k_ids[i] = offset == 0 ? q_ids[i] : schemes_[i]->transform_ids(all_ids, 0, train);  // [L', B, S]
    if (schemes_[i]->hooks() & kHookInputEmbedding) {
      x = x + schemes_[i]->embed(q_ids[i]);  // [B, T, C]
    }
  }
  if (train && cfg_.dropout > 0) {
    x = emb_dropout_(x);
  }
  if (cache && cache->keys.empty()) {
    cache->keys.resize(cfg_.layers);
    cache->values.resize(cfg_.layers);
  }
  if (attention) {
    attention->assign(cfg_.layers, torch::Tensor());
  }
  for (int64_t l = 0; l < cfg_.layers; ++l) {
    auto block = blocks_->ptr<BlockImpl>(cfg_.shared_layers ? 0 : l);
    x = block->forward(x, schemes_, q_ids, k_ids, cache ? &cache->keys[l] : nullptr,
                       cache ? &cache->values[l] : nullptr,
                       attention ? &(*attention)[l] : nullptr);
  }
  if (cache) {
    cache->ids = all_ids;
  }
  if (norm_final_) {
    x = norm_final_(x);
  }
  if (lm_head_) {
    return lm_head_(x);  // [B, T, V]
  }
  return torch::matmul(x, tok_emb_->weight.t());  // [B, T, C] x [C, V] -> [B, T, V]
}

int64_t TransformerImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) {
    n += p.numel();
  }
  return n;
}

}  // namespace lengen
