#pragma once

// Attention analysis shared by commands and stages: mean attention maps of chosen layers and
// heads over samples of one length, optionally only over the samples the model answers
// correctly, as weights (post-softmax) or scores (pre-softmax).

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace lengen {

struct AttentionRequest {
  std::vector<int64_t> layers;  ///< indices into model->attention_names(); empty: all
  std::vector<int64_t> heads;   ///< empty: all
  bool pre_softmax = false;     ///< scores (q.k scaled, biases added; -inf where masked)
  bool correct_only = false;    ///< only samples whose greedy response is exactly right
  int64_t batch_size = 64;
};

/// One averaged map.
struct AttentionMap {
  int64_t layer = 0;  ///< index into attention_names()
  std::string name;   ///< "blocks.0", "blocks.0.cross", "encoder.0", ...
  int64_t head = 0;
  torch::Tensor mean;                      ///< [queries, keys] float64 on the CPU
  std::vector<std::string> queries, keys;  ///< token strings of the first sample used
  /// Per key: 1 where every sample averaged holds the same token there (zero padding, a
  /// marker), so attending to it reads nothing of the input.
  std::vector<uint8_t> constant_keys;
};

struct AttentionMaps {
  std::vector<AttentionMap> maps;
  int64_t samples = 0;  ///< samples averaged over
  int64_t drawn = 0;    ///< samples offered (samples < drawn with correct_only)
};

/// `n` evaluation samples of a grid cell, seeded by `seed` (the same for every caller).
LENGEN_API std::vector<Example> cell_samples(const Task& task,
                                             const GridCell& cell,
                                             int64_t n,
                                             uint64_t seed);

/// Averages the model's attention over `examples` (which must share one length) under the
/// model's architecture: decoder self-attention over the sequence, an encoder_decoder's
/// encoder over the source and its cross-attention from target to source. When correct_only
/// leaves no sample it returns no maps (samples 0, drawn the number offered).
LENGEN_API AttentionMaps mean_attention(Transformer& model,
                                        const Task& task,
                                        const std::vector<Example>& examples,
                                        const torch::Device& device,
                                        const AttentionRequest& request);

/// Writes `maps` as DIR/attention.json (atomically) and draws DIR/attention.png
/// (scripts/plot_attention.py); returns the JSON's path. `meta` (a JSON object as text)
/// is merged into the file's top level.
LENGEN_API std::string write_attention(const AttentionMaps& maps,
                                       const std::string& dir,
                                       const std::string& meta);

}  // namespace lengen
