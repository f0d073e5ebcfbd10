#pragma once

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/task/task.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lengen {

/// The `eval:` section of an experiment.
struct LENGEN_API EvalConfig {
  std::map<std::string, std::vector<int64_t>> grid;  ///< axis -> values (from [lo, hi])
  int64_t samples = 1000;                            ///< per cell
  int64_t batch_size = 256;  ///< at most this many sequences per forward pass (or decode)
  /// ... and at most this many padded tokens (sequences x the longest); 0: by device and
  /// model (eval_batch_tokens).
  int64_t batch_tokens = 0;
  uint64_t seed = 1234;        ///< evaluation data seed, independent of the training seed
  bool greedy_decode = false;  ///< true KV-cached decoding instead of the teacher-forced check
  /// "response": exact match of the whole response, scratchpad and EOS included (the papers'
  /// default). "answer": exact match of the final answer only, the tokens from the example's
  /// answer_begin up to (not including) EOS, of a greedy decode (always decoded: Cho et al.
  /// 2025's parity answer token, the answer-only ablation of App. C).
  /// "answer_given_scratchpad": the answer tokens teacher-forced after the reference
  /// scratchpad (a diagnostic, not a decoding metric: it can be 100% where decoding fails).
  std::string metric = "response";
  /// Applications of each looped stack at test time (0: the model's own `model.loops`).
  int64_t loops = 0;
  /// Adaptive looping: up to this many loops beyond each sample's own count, keeping the
  /// most confident one (TransformerImpl::set_adaptive_loops); 0: off.
  int64_t adaptive_loops = 0;
  /// Example features (keys of Example::meta the task writes, e.g. addition's `carries` and
  /// `carry_chain`) to break each cell's accuracy down by; non-empty also records where wrong
  /// responses are wrong (CellAnalysis). Decodes (the breakdown needs the responses).
  std::vector<std::string> breakdown;
  /// Up to this many samples of each cell kept for eval/examples.jsonl (the query, the
  /// reference, the model's response, the verdict, the features), the wrong ones first.
  /// Non-zero decodes, as the breakdown does.
  int64_t examples = 0;
  /// On CUDA, the forward passes under bfloat16 autocast, as training with dtype: bfloat16
  /// runs (logits scored in float32); off: float32, as on the CPU. No effect on the CPU.
  bool autocast = false;

  /// The section's schema (validation and docs/config-reference.md).
  static ComponentSpec schema();
  /// Reads `eval:`; `axes` are the task's axes (unknown axis names are errors).
  static EvalConfig from_config(const ConfigNode& node, const std::vector<GridAxis>& axes);
  YAML::Node to_yaml() const;
  /// Every cell of the grid, first axis slowest.
  std::vector<GridCell> cells() const;

  /// Axis names in the task's order.
  const std::vector<std::string>& axes() const { return grid_order_; }

  std::vector<std::string> grid_order_;  ///< axis names in the task's order
};

}  // namespace lengen
