// ModelConfig (the `model:` section).
#include "lengen/model/config.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/model/architecture.h"
#include "lengen/registry/registry.h"

namespace lengen {

int64_t ModelConfig::encoder_depth() const {
  const Architecture& a = architecture(arch);
  if (!a.encoder) {
    return 0;
  }
  return a.decoder && encoder_layers >= 0 ? encoder_layers : layers;
}

int64_t ModelConfig::decoder_depth() const {
  return architecture(arch).decoder ? layers : 0;
}

ComponentSpec ModelConfig::schema() {
  using O = OptionSpec;
  std::vector<std::string> archs;
  for (const auto& a : architectures()) archs.push_back(a.name);
  return {"section", "model", "the architecture",
          {O::string("arch", "a registered architecture: decoder (causal, next token), encoder_decoder (bidirectional "
                     "encoder over the query, causal decoder with cross-attention), encoder (bidirectional, a "
                     "per-position classifier over output slots)")
               .with_default(std::string("decoder")).one_of(archs),
           O::integer("layers", "blocks per loop: the decoder's, or the encoder's for arch encoder; 0: embeddings "
                      "and output only").with_default(int64_t{2}).at_least(0),
           O::integer("encoder_layers", "encoder_decoder only: encoder blocks (-1 = layers)").with_default(int64_t{-1}).at_least(-1),
           O::integer("heads", "attention heads").with_default(int64_t{4}).at_least(1),
           O::integer("d_model", "residual width C").with_default(int64_t{128}).at_least(1),
           O::integer("d_head", "head width D; 0 = d_model / heads").with_default(int64_t{0}).at_least(0),
           O::integer("d_ff", "feed-forward width (each input projection for gated ones); 0 = attention only")
               .with_default(int64_t{512}).at_least(0),
           O::string("norm", "a registered norm (\"Norms\" below)")
               .with_default(std::string("layernorm")).one_of(norm_registry().names()),
           O::string("norm_position", "pre_post: a norm before and after each residual sum (Cho et al.)")
               .with_default(std::string("pre")).one_of({"pre", "post", "pre_post"}),
           O::string("activation", "feed-forward activation: a registered one (\"Activations\" below)")
               .with_default(std::string("gelu")).one_of(activation_registry().names()),
           O::number("dropout", "on embeddings, attention weights and residual branches, in [0, 1)").with_default(0.0),
           O::number("norm_eps", "the norm's epsilon (model.norm)").with_default(1e-5).at_least(0),
           O::number("softmax_eps", "attention weights exp(s - max) / (sum + eps); TAOTP programs: 1e-10")
               .with_default(0.0).at_least(0),
           O::boolean("bias", "default of attention_bias and ff_bias").may_be_absent(),
           O::boolean("attention_bias", "biases in the q/k/v and output projections (default: bias)").may_be_absent(),
           O::boolean("ff_bias", "biases in the feed-forward projections (default: bias)").may_be_absent(),
           O::boolean("tie_embeddings", "the output head shares the token embedding").with_default(false),
           O::boolean("head_bias", "a bias in the output head (Hugging Face BERT's classifier has one); not "
                      "with tie_embeddings").with_default(false),
           O::boolean("embedding_norm", "a norm (model.norm) over token plus position embeddings before the "
                      "first block, as BERT's embedding LayerNorm").with_default(false),
           O::string("init", "weight initialisation of the core's layers: pytorch (each module's own default: "
                     "Linear U(+-1/sqrt(fan_in)), Embedding N(0, 1)) or normal (every Linear and Embedding "
                     "weight N(0, init_std), biases 0: Hugging Face BERT and GPT-2). Position schemes keep "
                     "their own (their init options)")
               .with_default(std::string("pytorch")).one_of({"pytorch", "normal"}),
           O::number("init_std", "std of init: normal").with_default(0.02).at_least(0),
           O::boolean("shared_layers", "universal Transformer: one block per stack, applied `layers` times per loop")
               .with_default(false),
           O::integer("loops", "looped (universal) Transformer: each stack applied `loops` times; eval.loops changes "
                      "it at test time").with_default(int64_t{1}).at_least(1),
           O::boolean("input_injection", "add the input embedding to the residual stream before every loop after the first")
               .with_default(false),
           O::number("loops_per_length", "loops tied to the input (Fan et al. 2025; encoder only): > 0 gives each "
                     "sample max(1, round(loops_per_length * n + loops_offset)) loops (half up), n = its "
                     "input tokens that carry no label; 0: model.loops for every sample")
               .with_default(0.0).at_least(0),
           O::integer("loops_offset", "the offset of loops_per_length's rule").with_default(int64_t{0})}};
}

namespace {

const Section<ModelConfig>& model_section() {
  static const Section<ModelConfig> s = Section<ModelConfig>(ModelConfig::schema())
                                            .bind("arch", &ModelConfig::arch)
                                            .bind("layers", &ModelConfig::layers)
                                            .bind("encoder_layers", &ModelConfig::encoder_layers)
                                            .bind("heads", &ModelConfig::heads)
                                            .bind("d_model", &ModelConfig::d_model)
                                            .bind("d_head", &ModelConfig::d_head)
                                            .bind("d_ff", &ModelConfig::d_ff)
                                            .bind("norm", &ModelConfig::norm)
                                            .bind("norm_position", &ModelConfig::norm_position)
                                            .bind("activation", &ModelConfig::activation)
                                            .bind("dropout", &ModelConfig::dropout)
                                            .bind("norm_eps", &ModelConfig::norm_eps)
                                            .bind("softmax_eps", &ModelConfig::softmax_eps)
                                            .bind("attention_bias", &ModelConfig::attention_bias)
                                            .bind("ff_bias", &ModelConfig::ff_bias)
                                            .bind("tie_embeddings", &ModelConfig::tie_embeddings)
                                            .bind("head_bias", &ModelConfig::head_bias)
                                            .bind("embedding_norm", &ModelConfig::embedding_norm)
                                            .bind("init", &ModelConfig::init)
                                            .bind("init_std", &ModelConfig::init_std)
                                            .bind("shared_layers", &ModelConfig::shared_layers)
                                            .bind("loops", &ModelConfig::loops)
                                            .bind("input_injection", &ModelConfig::input_injection)
                                            .bind("loops_per_length", &ModelConfig::loops_per_length)
                                            .bind("loops_offset", &ModelConfig::loops_offset);
  return s;
}

}  // namespace

ModelConfig ModelConfig::from_config(const ConfigNode& node) {
  ModelConfig c;
  Options o = model_section().read(node, c);
  // `bias` is YAML shorthand for both; the specific keys win.
  const bool bias = o.given("bias") && o.get_bool("bias");
  if (!o.given("attention_bias")) c.attention_bias = bias;
  if (!o.given("ff_bias")) c.ff_bias = bias;
  auto positive = [&](const char* key, int64_t v) {
    if (v < 1) {
      node.child(key).fail(fmt::format("model.{} must be at least 1, got {}", key, v));
    }
  };
  if (c.layers < 0) {
    node.child("layers").fail(fmt::format("model.layers must be >= 0, got {}", c.layers));
  }
  if (c.encoder_layers < -1) {
    node.child("encoder_layers")
        .fail("model.encoder_layers must be >= 0 (or -1: the same as model.layers)");
  }
  if (c.encoder_layers >= 0 && !(architecture(c.arch).encoder && architecture(c.arch).decoder)) {
    node.child("encoder_layers")
        .fail(fmt::format("model.encoder_layers applies to encoder_decoder only (arch is '{}'; "
                          "model.layers sets the depth)",
                          c.arch));
  }
  positive("heads", c.heads);
  positive("d_model", c.d_model);
  positive("loops", c.loops);
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
  if (c.softmax_eps < 0) {
    node.child("softmax_eps").fail(fmt::format("model.softmax_eps must be >= 0, got {}", c.softmax_eps));
  }
  if (c.head_bias && c.tie_embeddings) {
    node.child("head_bias").fail("model.head_bias needs an output head of its own; it cannot be "
                                 "combined with model.tie_embeddings: true");
  }
  if (c.dropout < 0 || c.dropout >= 1) {
    node.child("dropout").fail(fmt::format("model.dropout must be in [0, 1), got {}", c.dropout));
  }
  if (c.loops_per_length > 0 && architecture(c.arch).layout != Layout::kLabeled) {
    node.child("loops_per_length")
        .fail(fmt::format("model.loops_per_length needs the whole output from one forward pass "
                          "(arch: encoder); '{}' decodes token by token",
                          c.arch));
  }
  if (c.loops_per_length == 0 && c.loops_offset != 0) {
    node.child("loops_offset").fail("model.loops_offset is the offset of model.loops_per_length's "
                                    "rule; set loops_per_length > 0 (or drop loops_offset)");
  }
  return c;
}

torch::Tensor ModelConfig::sample_loops(const torch::Tensor& lengths) const {
  if (loops_per_length <= 0) {
    return torch::full_like(lengths, loops);  // [B]
  }
  // Rounded half up (torch::round rounds half to even).
  auto t = torch::floor(lengths.to(torch::kFloat64) * loops_per_length + static_cast<double>(loops_offset) + 0.5);
  return t.clamp_min(1.0).to(torch::kInt64);  // [B]
}

YAML::Node ModelConfig::to_yaml() const {
  ModelConfig resolved = *this;
  resolved.d_head = head_dim();
  resolved.encoder_layers = encoder_depth();
  YAML::Node n = model_section().write(resolved);
  if (!(architecture(arch).encoder && architecture(arch).decoder)) n.remove("encoder_layers");
  return n;
}

}  // namespace lengen
