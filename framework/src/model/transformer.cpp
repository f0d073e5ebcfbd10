// The Transformer stacks of every registered architecture (decoder, encoder,
// encoder_decoder) and their looping; the components are in attention.cpp,
// block.cpp, feed_forward.cpp and norm.cpp.
#include "lengen/model/transformer.h"

#include "lengen/core/error.h"
#include "lengen/model/architecture.h"

namespace lengen {

TransformerImpl::TransformerImpl(ModelConfig cfg,
                                 int64_t vocab_size,
                                 std::vector<std::shared_ptr<PositionScheme>> schemes)
    : cfg_(std::move(cfg)),
      arch_(architecture(cfg_.arch)),
      stacks_(arch_->stacks()),
      vocab_size_(vocab_size),
      loops_(cfg_.loops),
      schemes_(std::move(schemes)) {
  if (stacks_.encoder) {
    check_position_support(schemes_, AttentionKind::kBidirectionalSelf, cfg_.arch);
  }
  if (stacks_.decoder) {
    check_position_support(schemes_, AttentionKind::kCausalSelf, cfg_.arch);
  }
  tok_emb_ = register_module("tok_emb", torch::nn::Embedding(vocab_size, cfg_.d_model));
  auto plist = torch::nn::ModuleList();
  for (auto& s : schemes_) {
    plist->push_back(s);
  }
  register_module("position", plist);
  const int64_t enc = cfg_.distinct(cfg_.encoder_depth());
  const int64_t dec = cfg_.distinct(cfg_.decoder_depth());
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  if (stacks_.decoder) {
    for (int64_t l = 0; l < dec; ++l) {
      // Scheme layer indices: the encoder's distinct blocks first, then the decoder's.
      const int64_t scheme_layer = (stacks_.encoder ? enc : 0) + l;
      blocks_->push_back(Block(cfg_, scheme_layer, AttentionKind::kCausalSelf, stacks_.cross));
    }
  } else {
    for (int64_t l = 0; l < enc; ++l) {
      blocks_->push_back(Block(cfg_, l, AttentionKind::kBidirectionalSelf, false));
    }
  }
  if (cfg_.norm_position != "post") {
    norm_final_ = register_module("norm_final", Norm(cfg_.norm, cfg_.d_model, cfg_.norm_eps));
  }
  if (!cfg_.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head",
        torch::nn::Linear(torch::nn::LinearOptions(cfg_.d_model, vocab_size).bias(cfg_.head_bias)));
  }
  if (cfg_.embedding_norm) {
    norm_embedding_ =
        register_module("norm_embedding", Norm(cfg_.norm, cfg_.d_model, cfg_.norm_eps));
  }
  emb_dropout_ = register_module("emb_dropout", torch::nn::Dropout(cfg_.dropout));
  if (stacks_.encoder && stacks_.decoder) {
    encoder_ = register_module("encoder", torch::nn::ModuleList());
    for (int64_t l = 0; l < enc; ++l) {
      encoder_->push_back(Block(cfg_, l, AttentionKind::kBidirectionalSelf, false));
    }
    if (cfg_.norm_position != "post") {
      norm_encoder_ = register_module("norm_encoder", Norm(cfg_.norm, cfg_.d_model, cfg_.norm_eps));
    }
  }
  if (cfg_.init == "normal") {
    init_normal(cfg_.init_std);
  }
}

void TransformerImpl::init_normal(double std) {
  // Hugging Face's BertPreTrainedModel._init_weights / GPT-2's: every Linear and Embedding
  // weight N(0, std), biases 0; norms keep weight 1, bias 0. The schemes' parameters
  // (position.*) follow their own init options.
  torch::NoGradGuard no_grad;
  for (const auto& item : named_modules("", /*include_self=*/false)) {
    if (item.key() == "position" || item.key().rfind("position.", 0) == 0) {
      continue;
    }
    if (auto* linear = item.value()->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, std);
      if (linear->bias.defined()) {
        linear->bias.zero_();
      }
    } else if (auto* embedding = item.value()->as<torch::nn::Embedding>()) {
      embedding->weight.normal_(0.0, std);
    }
  }
}

void TransformerImpl::set_loops(int64_t loops) {
  LENGEN_CHECK(loops >= 1, "loops must be >= 1, got {}", loops);
  loops_ = loops;
}

void TransformerImpl::set_adaptive_loops(int64_t extra) {
  LENGEN_CHECK(extra >= 0, "adaptive loops: extra loops must be >= 0, got {}", extra);
  LENGEN_CHECK(extra == 0 || arch_->one_pass(),
               "adaptive looping picks among whole outputs of one forward pass (arch: encoder); "
               "'{}' decodes token by token",
               arch_->name());
  adaptive_extra_ = extra;
}

torch::Tensor TransformerImpl::head(torch::Tensor x) {
  if (norm_final_) {
    x = norm_final_(x);
  }
  if (lm_head_) {
    return lm_head_(x);  // [B, T, V]
  }
  return torch::matmul(x, tok_emb_->weight.t());  // [B, T, C] x [C, V] -> [B, T, V]
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens,
                                       const torch::Tensor& ids,
                                       KVCache* cache,
                                       std::vector<torch::Tensor>* attention) {
  ModelInputs in;
  in.tokens = tokens;
  in.ids = ids;
  return forward(in, cache, attention);
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& tokens,
                                     const std::vector<torch::Tensor>& ids) {
  auto x = tok_emb_(tokens);  // [B, T, C]
  if (cfg_.scale_embedding) {
    x = x * std::sqrt(static_cast<double>(cfg_.d_model));
  }
  for (size_t i = 0; i < schemes_.size(); ++i) {
    if (schemes_[i]->hooks() & kHookInputEmbedding) {
      x = x + schemes_[i]->embed(ids[i]);  // [B, T, C]
    }
  }
  if (norm_embedding_) {
    x = norm_embedding_(x);  // [B, T, C]
  }
  return is_training() && cfg_.dropout > 0 ? emb_dropout_(x) : x;
}

torch::Tensor TransformerImpl::forward_encoder(const ModelInputs& in,
                                               std::vector<torch::Tensor>* attention,
                                               int64_t rows_from) {
  const bool train = is_training();
  const size_t n = schemes_.size();
  const int64_t enc_depth = cfg_.encoder_depth();
  std::vector<torch::Tensor> ids(n);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = schemes_[i]->position_ids(in.ids, 0, train);  // [L', B, T]
  }
  AttentionInputs self;
  self.schemes = &schemes_;
  self.query_ids = self.key_ids = &ids;
  self.key_padding = in.padding;
  const bool adaptive = adaptive_extra_ > 0 && !train;
  if (cfg_.loops_per_length > 0 || adaptive) {
    LENGEN_CHECK(in.lengths.defined(),
                 "model.loops_per_length and adaptive looping need each sample's input length "
                 "(ModelInputs::lengths, set by the labeled batch)");
    LENGEN_CHECK(attention == nullptr,
                 "attention maps of a model whose loop count varies by sample are not available; "
                 "set model.loops_per_length: 0 and a fixed eval.loops to look at them");
    torch::Tensor loops = cfg_.loops_per_length > 0 ? cfg_.sample_loops(in.lengths)
                                                    : torch::full_like(in.lengths, loops_);  // [B]
    if (adaptive) {
      loops = loops + adaptive_extra_;
    }
    return run_encoder_per_sample(
        embed(in.tokens, ids), self, loops.cpu(), in.labelled, adaptive, rows_from);
  }
  auto x = run_stack(
      blocks_, enc_depth, embed(in.tokens, ids), self, {}, nullptr, false, attention, 0, rows_from);
  return head(x);  // [B, T - outputs_from, V]
}

torch::Tensor TransformerImpl::encode_source(const ModelInputs& in,
                                             KVCache* cache,
                                             std::vector<torch::Tensor>* attention,
                                             std::vector<torch::Tensor>& mem_ids,
                                             std::vector<torch::Tensor>& q_ids,
                                             std::vector<torch::Tensor>& k_ids,
                                             torch::Tensor& memory_padding,
                                             bool& target_done) {
  const bool train = is_training();
  const size_t n = schemes_.size();
  const int64_t enc_depth = cfg_.encoder_depth();
  torch::Tensor memory;
  if (cache && cache->memory.defined()) {
    memory = cache->memory;
    memory_padding = cache->memory_padding;
    mem_ids = cache->memory_ids;
  } else {
    LENGEN_CHECK(in.source.defined() && in.source_ids.defined(),
                 "the '{}' architecture needs a source (ModelInputs::source)",
                 arch_->name());
    for (size_t i = 0; i < n; ++i) {
      if (cache == nullptr) {
        // One forward over whole sequences: randomness (offsets) shared by both sides.
        std::tie(mem_ids[i], q_ids[i]) =
            schemes_[i]->position_ids_pair(in.source_ids, in.ids, train);
        k_ids[i] = q_ids[i];
        target_done = true;
      } else {
        mem_ids[i] = schemes_[i]->position_ids(in.source_ids, 0, train);  // [L', B, S]
      }
    }
    AttentionInputs self;
    self.schemes = &schemes_;
    self.query_ids = self.key_ids = &mem_ids;
    self.key_padding = in.source_padding;
    memory = run_stack(encoder_,
                       enc_depth,
                       embed(in.source, mem_ids),
                       self,
                       {},
                       nullptr,
                       false,
                       attention,
                       0);  // [B, S, C]
    if (norm_encoder_) {
      memory = norm_encoder_(memory);
    }
    memory_padding = in.source_padding;
    if (cache) {
      cache->memory = memory;
      cache->memory_padding = memory_padding;
      cache->memory_ids = mem_ids;
    }
  }
  return memory;
}

torch::Tensor TransformerImpl::forward(const ModelInputs& in,
                                       KVCache* cache,
                                       std::vector<torch::Tensor>* attention) {
  const bool train = is_training();
  const size_t n = schemes_.size();
  const int64_t rows_from = in.outputs_from;
  LENGEN_CHECK(rows_from >= 0 && rows_from < in.tokens.size(1),
               "outputs_from must be in [0, {}), got {}",
               in.tokens.size(1),
               rows_from);
  LENGEN_CHECK(rows_from == 0 || (cache == nullptr && attention == nullptr),
               "outputs_from needs a forward without a cache and without attention maps");
  const int64_t enc_depth = cfg_.encoder_depth(), dec_depth = cfg_.decoder_depth();
  if (attention) {
    const int64_t per_loop = enc_depth + dec_depth * (stacks_.cross ? 2 : 1);
    attention->assign(static_cast<size_t>(per_loop * loops_), torch::Tensor());
  }

  const bool packed = in.segments.defined();
  LENGEN_CHECK(
      !packed || (stacks_.decoder && !stacks_.encoder && cache == nullptr),
      "packed rows (train.pack) need the decoder architecture and no KV cache; this model's "
      "architecture is '{}'",
      arch_->name());
  if (!stacks_.decoder) {
    // Encoder only: every position sees every real position; no incremental decoding.
    LENGEN_CHECK(
        cache == nullptr, "the '{}' architecture has no incremental decoding", arch_->name());
    return forward_encoder(in, attention, rows_from);
  }

  const int64_t offset = cache ? cache->length() : 0;
  std::vector<torch::Tensor> q_ids(n), k_ids(n), mem_ids(n);
  torch::Tensor memory, memory_padding;
  bool target_done = false;
  if (stacks_.encoder) {
    memory =
        encode_source(in, cache, attention, mem_ids, q_ids, k_ids, memory_padding, target_done);
  }
  // The decoder: the new tokens' IDs as queries, every cached token's and theirs as keys.
  const torch::Tensor all_ids =
      (cache && cache->ids.defined()) ? torch::cat({cache->ids, in.ids}, 2) : in.ids;  // [L, B, S]
  if (!target_done) {
    for (size_t i = 0; i < n; ++i) {
      q_ids[i] = schemes_[i]->position_ids(
          in.ids, offset, train, in.segments, in.sequence_index);  // [L', B, T]
      k_ids[i] =
          offset == 0 ? q_ids[i] : schemes_[i]->position_ids(all_ids, 0, train);  // [L', B, S]
    }
  }
  AttentionInputs self, cross;
  if (packed) {
    // Block-diagonal: a position attends only within its own sample (the causal mask does the
    // rest).
    self.other_sample =
        (in.segments.unsqueeze(2) != in.segments.unsqueeze(1)).unsqueeze(1);  // [B, 1, T, T]
  }
  self.schemes = cross.schemes = &schemes_;
  self.query_ids = cross.query_ids = &q_ids;
  self.key_ids = &k_ids;
  cross.key_ids = &mem_ids;
  cross.key_padding = memory_padding;
  cross.memory = memory;
  self.query_offset = cross.query_offset = offset;
  const size_t attention_offset = static_cast<size_t>(stacks_.encoder ? enc_depth * loops_ : 0);
  auto x = run_stack(blocks_,
                     dec_depth,
                     embed(in.tokens, q_ids),
                     self,
                     cross,
                     cache,
                     stacks_.cross,
                     attention,
                     attention_offset,
                     rows_from);
  if (cache) {
    cache->ids = all_ids;
  }
  return head(x);  // [B, T - outputs_from, V]
}

int64_t TransformerImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) {
    n += p.numel();
  }
  return n;
}

}  // namespace lengen
