#pragma once
// One kind of attention (decoder self- or cross-attention) calibrated: the calibrate stage's
// per-head line averages, selection and extension (Duan & Shi 2023, Algorithm 1), with what
// it writes for that kind.

#include "lines.h"

#include "lengen/analysis/attention.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lengen::abc {

/// How the calibrate stage selects and extends lines (its options; docs/abc.md).
struct Selection {
  Statistic statistic = Statistic::kMean;
  double coverage = 0;
  bool explain_away = false;   ///< select: explain_away (else threshold)
  bool drop_constant = false;  ///< constant_keys: drop
  bool strongest = false;      ///< empty_heads: strongest
  double sigmas = 0, self_sigmas = 0;
  std::vector<Direction> cross_dirs, self_dirs;
  std::map<Direction, Anchor> anchors;  ///< cross-attention's anchor per direction
};

/// Calibrates `heads` (one kind's averaged maps, every head) over their first `rows` rows (0:
/// all): appends "<prefix><kind>" line tensors, ".average" and ".extended" to `tensors` and
/// returns the kind's part of abc.json; null when `s` searches no direction of this kind.
nlohmann::json calibrate_kind(const std::vector<const AttentionMap*>& heads,
                              bool cross,
                              int64_t rows,
                              const std::string& prefix,
                              const Selection& s,
                              std::vector<std::pair<std::string, torch::Tensor>>& tensors);

}  // namespace lengen::abc
