#pragma once

// The `model:` section of an experiment (ModelConfig): every field a YAML key, its schema, and
// the depths of each stack that follow from it and the architecture. src/model/config.cpp.

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"

#include <torch/types.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>

namespace lengen {

/// The model section of an experiment. Every field is a YAML key of `model:`; the key `bias`
/// sets attention_bias and ff_bias together.
struct LENGEN_API ModelConfig {
  std::string arch = "decoder";  ///< a registered architecture (architectures())
  int64_t layers = 2;            ///< decoder layers; the encoder's for `encoder`; 0 allowed
  int64_t encoder_layers = -1;   ///< encoder_decoder: encoder depth (-1: same as layers)
  int64_t heads = 4;
  int64_t d_model = 128;              ///< C
  int64_t d_head = 0;                 ///< D; 0 means d_model / heads
  int64_t d_ff = 512;                 ///< hidden width of the feed-forward (per gate input)
  std::string norm = "layernorm";     ///< a registered norm (norm_registry())
  std::string norm_position = "pre";  ///< pre | post | pre_post
  std::string activation = "gelu";    ///< a registered activation (activation_registry())
  double dropout = 0.0;
  double norm_eps = 1e-5;
  double softmax_eps = 0.0;      ///< exp(s - max) / (sum + eps); TAOTP's Figure 1.1: 1e-10
  bool attention_bias = false;   ///< biases in the q/k/v and output projections
  bool ff_bias = false;          ///< biases in the feed-forward projections
  bool tie_embeddings = false;   ///< LM head shares the token embedding
  bool head_bias = false;        ///< a bias in the output head (BERT's classifier)
  bool embedding_norm = false;   ///< a norm over token + position embeddings (BERT)
  bool scale_embedding = false;  ///< token embeddings times sqrt(d_model) (Vaswani et al.)
  std::string init = "pytorch";  ///< pytorch (each module's default) | normal
  double init_std = 0.02;        ///< std of `init: normal` (BERT, GPT-2: 0.02)
  bool shared_layers = false;    ///< universal: one block per stack applied `layers` times
  int64_t loops = 1;             ///< universal/looped: each stack applied `loops` times
  bool input_injection = false;  ///< add the input embedding again before every loop > 0
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

  /// Blocks with their own weights in a stack of `depth` applications per loop.
  int64_t distinct(int64_t depth) const {
    return shared_layers ? std::min<int64_t>(depth, 1) : depth;
  }

  /// Self-attention layers with their own weights over all of the architecture's stacks: what
  /// position schemes with per-layer tables allocate (SchemeContext::layers). Loops reuse them.
  int64_t attention_layers() const;
};

}  // namespace lengen
