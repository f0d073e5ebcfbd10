// ModelConfig (the `model:` section) and the architecture registry.
#include "lengen/core/error.h"
#include "lengen/model/transformer.h"

#include <map>
#include <mutex>

namespace lengen {

namespace {

std::map<std::string, Architecture>& arch_table() {
  static std::map<std::string, Architecture> table = [] {
    std::map<std::string, Architecture> t;
    t["decoder"] = {"decoder", "decoder-only: causal self-attention, next-token prediction",
                    Layout::kSequence, false, true, false};
    t["encoder"] = {"encoder",
                    "encoder-only: bidirectional self-attention with a key-padding mask and a "
                    "per-position classifier over the output slots (Jelassi et al. 2023)",
                    Layout::kLabeled, true, false, false};
    t["encoder_decoder"] = {"encoder_decoder",
                            "encoder-decoder: bidirectional encoder over the query, causal "
                            "decoder with cross-attention generating the response",
                            Layout::kSeq2Seq, true, true, true};
    return t;
  }();
  return table;
}

std::mutex& arch_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

void register_architecture(Architecture arch) {
  std::lock_guard<std::mutex> lock(arch_mutex());
  LENGEN_CHECK(!arch.name.empty(), "register_architecture: empty name");
  LENGEN_CHECK(arch.encoder || arch.decoder, "architecture '{}' has no stack", arch.name);
  LENGEN_CHECK(arch_table().emplace(arch.name, arch).second,
               "architecture '{}' is registered twice", arch.name);
}

std::vector<Architecture> architectures() {
  std::lock_guard<std::mutex> lock(arch_mutex());
  std::vector<Architecture> out;
  for (const auto& [name, a] : arch_table()) {
    out.push_back(a);
  }
  return out;
}

const Architecture& architecture(const std::string& name) {
  std::lock_guard<std::mutex> lock(arch_mutex());
  auto it = arch_table().find(name);
  if (it == arch_table().end()) {
    std::vector<std::string> names;
    for (const auto& [n, a] : arch_table()) {
      names.push_back(n);
    }
    throw Error(fmt::format("unknown architecture '{}' (registered: {}){}", name, join(names),
                            did_you_mean(name, names)));
  }
  return it->second;
}

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

ModelConfig ModelConfig::from_config(const ConfigNode& node) {
  ModelConfig c;
  MapReader r(node);
  {
    std::vector<std::string> names;
    for (const auto& a : architectures()) {
      names.push_back(a.name);
    }
    c.arch = r.get_choice("arch", c.arch, names);
  }
  c.layers = r.get_int("layers", c.layers);
  c.encoder_layers = r.get_int("encoder_layers", c.encoder_layers);
  c.heads = r.get_int("heads", c.heads);
  c.d_model = r.get_int("d_model", c.d_model);
  c.d_head = r.get_int("d_head", c.d_head);
  c.d_ff = r.get_int("d_ff", c.d_ff);
  c.norm = r.get_choice("norm", c.norm, {"layernorm", "rmsnorm", "taotp_layernorm"});
  c.norm_position = r.get_choice("norm_position", c.norm_position, {"pre", "post", "pre_post"});
  c.activation = r.get_choice("activation", c.activation, {"relu", "gelu", "geglu", "swiglu"});
  c.dropout = r.get_float("dropout", c.dropout);
  c.norm_eps = r.get_float("norm_eps", c.norm_eps);
  c.softmax_eps = r.get_float("softmax_eps", c.softmax_eps);
  // `bias` is YAML shorthand for both; the specific keys win.
  const bool bias = r.get_bool("bias", false);
  c.attention_bias = r.get_bool("attention_bias", bias);
  c.ff_bias = r.get_bool("ff_bias", bias);
  c.tie_embeddings = r.get_bool("tie_embeddings", c.tie_embeddings);
  c.shared_layers = r.get_bool("shared_layers", c.shared_layers);
  c.loops = r.get_int("loops", c.loops);
  c.input_injection = r.get_bool("input_injection", c.input_injection);
  r.finish();
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
  if (c.dropout < 0 || c.dropout >= 1) {
    node.child("dropout").fail(fmt::format("model.dropout must be in [0, 1), got {}", c.dropout));
  }
  return c;
}

YAML::Node ModelConfig::to_yaml() const {
  YAML::Node n;
  n["arch"] = arch;
  n["layers"] = layers;
  if (architecture(arch).encoder && architecture(arch).decoder) {
    n["encoder_layers"] = encoder_depth();
  }
  n["heads"] = heads;
  n["d_model"] = d_model;
  n["d_head"] = head_dim();
  n["d_ff"] = d_ff;
  n["norm"] = norm;
  n["norm_position"] = norm_position;
  n["activation"] = activation;
  n["dropout"] = dropout;
  n["norm_eps"] = norm_eps;
  n["softmax_eps"] = softmax_eps;
  n["attention_bias"] = attention_bias;
  n["ff_bias"] = ff_bias;
  n["tie_embeddings"] = tie_embeddings;
  n["shared_layers"] = shared_layers;
  n["loops"] = loops;
  n["input_injection"] = input_injection;
  return n;
}

}  // namespace lengen
