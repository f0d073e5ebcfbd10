#pragma once

// What a grid evaluation measured, cell by cell, and the files it is written to (eval/grid.csv,
// eval/breakdown.csv, eval/summary.json). src/eval/grid_results.cpp.

#include "lengen/core/export.h"
#include "lengen/core/run_dir.h"
#include "lengen/task/task.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// A cell's accuracy by example feature and the positions of wrong tokens (eval.breakdown;
/// Jelassi et al. 2023, Figure 6). Positions index the response (0 = its first token).
struct LENGEN_API CellAnalysis {
  /// feature -> value -> {samples, correct}
  std::map<std::string, std::map<int64_t, std::pair<int64_t, int64_t>>> by_feature;
  /// wrong responses: number of wrong response tokens -> samples
  std::map<int64_t, int64_t> wrong_tokens;
  /// wrong responses with exactly one wrong token: its position -> samples
  std::map<int64_t, int64_t> single_error_position;
  /// every sample: position -> samples wrong there (1 - it / samples: per-position accuracy)
  std::map<int64_t, int64_t> error_positions;

  bool empty() const {
    return by_feature.empty() && wrong_tokens.empty() && error_positions.empty();
  }

  /// Adds one sample: its features, whether it counts as correct, and its response against
  /// the reference (compared position by position; a missing token is wrong).
  void add(const std::map<std::string, int64_t>& features,
           const std::vector<std::string>& wanted,
           bool correct,
           const std::vector<int64_t>& reference,
           const std::vector<int64_t>& response);
};

/// One evaluated sample as eval.examples writes it to eval/examples.jsonl.
struct SampleRecord {
  std::string prompt;                       ///< the query as the task renders it
  std::string reference;                    ///< the reference response
  std::string response;                     ///< the model's response (a greedy decode)
  bool correct = false;                     ///< the cell's verdict on it (eval.metric)
  std::map<std::string, int64_t> features;  ///< the task's features of the example (Example::meta)
};

/// Result of one grid cell.
struct CellResult {
  GridCell cell;
  int64_t samples = 0;
  int64_t correct = 0;
  double accuracy = 0;
  double ci_low = 0, ci_high = 0;  ///< 95% Wilson score interval
  int64_t tokens = 0;              ///< tokens of the cell's sequences (prompt + reference response)
  double seconds = 0;              ///< wall time to sample and evaluate the cell
  /// Where the wrong samples first go wrong: (expected token, predicted token) -> samples;
  /// "(none)" where the response ended early or ran past the reference's end. For the
  /// answer-only metric: teacher-forced, the first wrong answer token given the reference
  /// scratchpad; under greedy decoding, where the response of a wrong answer first leaves
  /// the reference (possibly in the scratchpad).
  std::map<std::pair<std::string, std::string>, int64_t> first_errors;
  CellAnalysis analysis;  ///< empty unless eval.breakdown is set
  /// Up to eval.examples samples, the wrong ones first, each group in sampling order.
  std::vector<SampleRecord> examples;
};

/// 95% Wilson score interval for k successes out of n.
LENGEN_API std::pair<double, double> wilson_interval(int64_t k, int64_t n);

/// Trained range [lo, hi] of each grid axis that has one (plots outline it).
using TrainedRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

/// The trained ranges of a task's axes (those with train_hi > 0).
LENGEN_API TrainedRanges trained_ranges(const std::vector<GridAxis>& axes);

/// Writes RUN/eval/grid.csv and RUN/eval/summary.json (atomically); summary.json records the
/// metric and the trained ranges. breakdown.csv (eval.breakdown) and examples.jsonl
/// (eval.examples: one JSON object a line, `cell` first) are written when the results hold
/// them and removed when they do not, so no file in RUN/eval describes an earlier evaluation.
LENGEN_API void write_grid_results(const RunDir& run,
                                   const std::vector<CellResult>& results,
                                   const std::vector<std::string>& axes,
                                   const std::string& metric =
                                       "exact match of the whole response "
                                       "under greedy decoding",
                                   const TrainedRanges& trained = {});

}  // namespace lengen
