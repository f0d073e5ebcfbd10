// ModelConfig (the `model:` section).
#include "lengen/model/config.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/model/architecture.h"
#include "lengen/registry/registry.h"

#include <algorithm>

namespace lengen {

int64_t ModelConfig::attention_layers() const {
  int64_t n = 0;
  for (const auto& s : architecture(arch)->stacks(*this)) {
    n += distinct(s.depth);
  }
  return n;
}

namespace {

// Whether `arch` reads `key`, one of the `model:` keys only some architectures read.
bool reads(const Architecture& arch, const std::string& key) {
  const auto own = arch.own_keys();
  return std::find(own.begin(), own.end(), key) != own.end();
}

const Section<ModelConfig>& model_section() {
  using O = OptionSpec;
  using M = ModelConfig;
  static const Section<ModelConfig> s = [] {
    return Section<ModelConfig>("model", "the architecture")
        .field(&M::arch,
               O::component(
                   "arch",
                   "a registered architecture (`lengen plugins`, \"Architectures\" below): "
                   "decoder (causal, next token), encoder_decoder (bidirectional encoder over "
                   "the query, causal decoder with cross-attention), encoder (bidirectional, a "
                   "per-position classifier over output slots)",
                   architecture_registry().kind()))
        .field(&M::layers,
               O::integer("layers",
                          "blocks per loop: the decoder's, or the encoder's for arch encoder; "
                          "0: embeddings and output only")
                   .at_least(0))
        .field(&M::encoder_layers,
               O::integer("encoder_layers", "encoder_decoder only: encoder blocks (-1 = layers)")
                   .at_least(-1))
        .field(&M::heads, O::integer("heads", "attention heads").at_least(1))
        .field(&M::d_model, O::integer("d_model", "residual width C").at_least(1))
        .field(&M::d_head, O::integer("d_head", "head width D; 0 = d_model / heads").at_least(0))
        .field(
            &M::d_ff,
            O::integer("d_ff",
                       "feed-forward width (each input projection for gated ones); 0 = attention "
                       "only")
                .at_least(0))
        .field(&M::norm,
               O::component("norm", "a registered norm (\"Norms\" below)", norm_registry().kind()))
        .field(&M::norm_position,
               O::string("norm_position",
                         "pre_post: a norm before and after each residual sum (Cho et al.)")
                   .one_of({"pre", "post", "pre_post"}))
        .field(&M::activation,
               O::component("activation",
                            "feed-forward activation: a registered one (\"Activations\" below)",
                            activation_registry().kind()))
        .field(&M::dropout,
               O::number("dropout",
                         "on embeddings, attention weights and residual branches, in [0, 1)"))
        .field(&M::norm_eps, O::number("norm_eps", "the norm's epsilon (model.norm)").at_least(0))
        .field(&M::softmax_eps,
               O::number("softmax_eps",
                         "attention weights exp(s - max) / (sum + eps); TAOTP programs: 1e-10")
                   .at_least(0))
        .option(O::boolean("bias", "default of attention_bias and ff_bias").may_be_absent())
        .field(&M::attention_bias,
               O::boolean("attention_bias",
                          "biases in the q/k/v and output projections (default: bias)")
                   .may_be_absent())
        .field(&M::ff_bias,
               O::boolean("ff_bias", "biases in the feed-forward projections (default: bias)")
                   .may_be_absent())
        .field(&M::tie_embeddings,
               O::boolean("tie_embeddings", "the output head shares the token embedding"))
        .field(&M::head_bias,
               O::boolean("head_bias",
                          "a bias in the output head (Hugging Face BERT's classifier has "
                          "one); not with tie_embeddings"))
        .field(&M::embedding_norm,
               O::boolean("embedding_norm",
                          "a norm (model.norm) over token plus position "
                          "embeddings before the first block, as BERT's embedding LayerNorm"))
        .field(
            &M::scale_embedding,
            O::boolean(
                "scale_embedding",
                "token embeddings times sqrt(d_model) before positions are added "
                "(Vaswani et al. 2017; PyTorch's translation tutorial and the ABC authors' code), "
                "so "
                "with Embedding N(0, 1) a token outweighs a sinusoidal position by sqrt(d_model)"))
        .field(
            &M::init,
            O::string(
                "init",
                "weight initialisation of the core's layers: pytorch (each module's own "
                "default: Linear U(+-1/sqrt(fan_in)), Embedding N(0, 1)) or normal (every Linear "
                "and Embedding weight N(0, init_std), biases 0: Hugging Face BERT and GPT-2). "
                "Position schemes keep their own (their init options)")
                .one_of({"pytorch", "normal"}))
        .field(&M::init_std, O::number("init_std", "std of init: normal").at_least(0))
        .field(&M::shared_layers,
               O::boolean("shared_layers",
                          "universal Transformer: one block per stack, applied "
                          "`layers` times per loop"))
        .field(&M::loops,
               O::integer("loops",
                          "looped (universal) Transformer: each stack applied `loops` times; "
                          "eval.loops changes it at test time")
                   .at_least(1))
        .field(&M::input_injection,
               O::boolean("input_injection",
                          "add the input embedding to the residual stream "
                          "before every loop after the first"))
        .field(&M::loops_per_length,
               O::number("loops_per_length",
                         "loops tied to the input (Fan et al. 2025; encoder only): > 0 gives each "
                         "sample max(1, round(loops_per_length * n + loops_offset)) loops (half "
                         "up), n = its input "
                         "tokens that carry no label; 0: model.loops for every sample")
                   .at_least(0))
        .field(&M::loops_offset,
               O::integer("loops_offset", "the offset of loops_per_length's rule"));
  }();
  return s;
}

}  // namespace

ComponentSpec ModelConfig::schema() {
  return model_section().spec();
}

ModelConfig ModelConfig::from_config(const ConfigNode& node) {
  ModelConfig c;
  Options o = model_section().read(node, c);
  // `bias` is YAML shorthand for both; the specific keys win.
  const bool bias = o.given("bias") && o.get_bool("bias");
  if (!o.given("attention_bias"))
    c.attention_bias = bias;
  if (!o.given("ff_bias"))
    c.ff_bias = bias;
  // The architecture (its reference checked as the section was read); then the rules between
  // keys (ranges are the schema's; and dropout's open end).
  const auto arch = architecture(c.arch);
  if (c.encoder_layers >= 0 && !reads(*arch, "encoder_layers")) {
    node.child("encoder_layers")
        .fail(fmt::format("model.encoder_layers applies to encoder_decoder only (arch is '{}'; "
                          "model.layers sets the depth)",
                          c.arch));
  }
  if (c.d_head == 0 && c.d_model % c.heads != 0) {
    node.child("heads").fail(
        fmt::format("d_model {} is not divisible by heads {}; set model.d_head explicitly",
                    c.d_model,
                    c.heads));
  }
  if (c.head_bias && c.tie_embeddings) {
    node.child("head_bias")
        .fail(
            "model.head_bias needs an output head of its own; it cannot be "
            "combined with model.tie_embeddings: true");
  }
  if (c.dropout < 0 || c.dropout >= 1) {
    node.child("dropout").fail(fmt::format("model.dropout must be in [0, 1), got {}", c.dropout));
  }
  if (c.loops_per_length > 0 && !arch->one_pass()) {
    node.child("loops_per_length")
        .fail(fmt::format("model.loops_per_length needs the whole output from one forward pass "
                          "(arch: encoder); '{}' decodes token by token",
                          c.arch));
  }
  if (c.loops_per_length == 0 && c.loops_offset != 0) {
    node.child("loops_offset")
        .fail(
            "model.loops_offset is the offset of model.loops_per_length's "
            "rule; set loops_per_length > 0 (or drop loops_offset)");
  }
  return c;
}

torch::Tensor ModelConfig::sample_loops(const torch::Tensor& lengths) const {
  if (loops_per_length <= 0) {
    return torch::full_like(lengths, loops);  // [B]
  }
  // Rounded half up (torch::round rounds half to even).
  auto t = torch::floor(lengths.to(torch::kFloat64) * loops_per_length +
                        static_cast<double>(loops_offset) + 0.5);
  return t.clamp_min(1.0).to(torch::kInt64);  // [B]
}

YAML::Node ModelConfig::to_yaml() const {
  ModelConfig resolved = *this;
  resolved.d_head = head_dim();
  if (resolved.encoder_layers < 0)
    resolved.encoder_layers = layers;  // -1 = layers
  YAML::Node n = model_section().write(resolved);
  if (!reads(*architecture(arch), "encoder_layers"))
    n.remove("encoder_layers");
  return n;
}

}  // namespace lengen
