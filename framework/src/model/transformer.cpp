// The Transformer: the stacks its architecture declares, the embedding and the output head;
// the architecture wires them (Architecture::forward, framework/src/model/architecture/). The
// components are in attention.cpp, block.cpp, feed_forward.cpp and norm.cpp; running a stack in
// transformer_stack.cpp.
#include "lengen/model/transformer.h"

#include "lengen/core/error.h"
#include "lengen/model/architecture.h"

namespace lengen {

TransformerImpl::TransformerImpl(ModelConfig cfg,
                                 int64_t vocab_size,
                                 std::vector<std::shared_ptr<PositionScheme>> schemes)
    : cfg_(std::move(cfg)),
      arch_(architecture(cfg_.arch)),
      stacks_(arch_->stacks(cfg_)),
      vocab_size_(vocab_size),
      loops_(cfg_.loops),
      schemes_(std::move(schemes)) {
  LENGEN_CHECK(!stacks_.empty(), "architecture '{}' declares no stack", cfg_.arch);
  for (const auto& s : stacks_) {
    LENGEN_CHECK(s.attention != AttentionKind::kCross,
                 "architecture '{}': stack '{}' has cross-attention as its self-attention",
                 cfg_.arch,
                 s.name);
    check_position_support(schemes_, s.attention, cfg_.arch);
  }
  LENGEN_CHECK(!stacks_.front().cross,
               "architecture '{}': its first stack '{}' has no earlier stack to cross-attend to",
               cfg_.arch,
               stacks_.front().name);
  tok_emb_ = register_module("tok_emb", torch::nn::Embedding(vocab_size, cfg_.d_model));
  auto plist = torch::nn::ModuleList();
  for (auto& s : schemes_) {
    plist->push_back(s);
  }
  register_module("position", plist);
  // The last stack (the one the head reads) first, the head, then the others (StackSpec).
  stack_modules_.assign(stacks_.size(), torch::nn::ModuleList(nullptr));
  stack_norms_.assign(stacks_.size(), Norm(nullptr));
  build_stack(stacks_.size() - 1);
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
  for (size_t i = 0; i + 1 < stacks_.size(); ++i) {
    build_stack(i);
  }
  if (cfg_.init == "normal") {
    init_normal(cfg_.init_std);
  }
}

void TransformerImpl::build_stack(size_t i) {
  const StackSpec& spec = stacks_[i];
  // Scheme layer indices: the distinct blocks of the stacks that run before it come first.
  int64_t first_layer = 0;
  for (size_t j = 0; j < i; ++j) {
    first_layer += cfg_.distinct(stacks_[j].depth);
  }
  stack_modules_[i] = register_module(spec.name, torch::nn::ModuleList());
  for (int64_t l = 0; l < cfg_.distinct(spec.depth); ++l) {
    stack_modules_[i]->push_back(Block(cfg_, first_layer + l, spec.attention, spec.cross));
  }
  if (i + 1 < stacks_.size() && cfg_.norm_position != "post") {
    stack_norms_[i] =
        register_module("norm_" + spec.name, Norm(cfg_.norm, cfg_.d_model, cfg_.norm_eps));
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

torch::Tensor TransformerImpl::stack_output(size_t stack, torch::Tensor x) {
  return stack_norms_.at(stack) ? stack_norms_[stack](x) : x;  // [B, T, C]
}

AttentionInputs TransformerImpl::attention_inputs(const std::vector<torch::Tensor>* query_ids,
                                                  const std::vector<torch::Tensor>* key_ids) const {
  AttentionInputs a;
  a.schemes = &schemes_;
  a.query_ids = query_ids;
  a.key_ids = key_ids;
  return a;
}

torch::Tensor TransformerImpl::forward(const ModelInputs& in,
                                       KVCache* cache,
                                       std::vector<torch::Tensor>* attention) {
  const int64_t rows_from = in.outputs_from;
  LENGEN_CHECK(rows_from >= 0 && rows_from < in.tokens.size(1),
               "outputs_from must be in [0, {}), got {}",
               in.tokens.size(1),
               rows_from);
  LENGEN_CHECK(rows_from == 0 || (cache == nullptr && attention == nullptr),
               "outputs_from needs a forward without a cache and without attention maps");
  LENGEN_CHECK(!in.segments.defined() || (arch_->one_sequence() && cache == nullptr),
               "packed rows (train.pack) need an architecture that reads one causal sequence a "
               "row (decoder) and no KV cache; this model's architecture is '{}'",
               arch_->name());
  if (attention) {
    int64_t per_loop = 0;
    for (const auto& s : stacks_) {
      per_loop += s.depth * (s.cross ? 2 : 1);
    }
    attention->assign(static_cast<size_t>(per_loop * loops_), torch::Tensor());
  }
  return arch_->forward(*this, in, cache, attention);  // [B, T - outputs_from, V]
}

int64_t TransformerImpl::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) {
    n += p.numel();
  }
  return n;
}

}  // namespace lengen
