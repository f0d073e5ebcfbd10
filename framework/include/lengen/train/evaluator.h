#pragma once

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"
#include "lengen/train/eval_config.h"

#include <torch/types.h>

#include <functional>
#include <map>
#include <string>
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
  bool empty() const { return by_feature.empty() && wrong_tokens.empty() && error_positions.empty(); }
  /// Adds one sample: its features, whether it counts as correct, and its response against
  /// the reference (compared position by position; a missing token is wrong).
  void add(const std::map<std::string, int64_t>& features,
           const std::vector<std::string>& wanted,
           bool correct,
           const std::vector<int64_t>& reference,
           const std::vector<int64_t>& response);
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
};

/// The first response position where greedy decoding leaves the reference, if any.
struct FirstError {
  int64_t position = -1;   ///< index into the sequence's targets; -1: the sample is correct
  int64_t expected = -1;   ///< reference token there
  int64_t predicted = -1;  ///< the model's argmax there
};

/// The evaluator's batches: consecutive ranges [begin, end) over `lengths` (ascending) that
/// cover it in order, each of at most `max_sequences` sequences and at most `max_tokens`
/// padded tokens (count x its longest; 0: no cap). A sequence longer than `max_tokens` is a
/// batch of its own.
LENGEN_API std::vector<std::pair<size_t, size_t>> eval_batches(const std::vector<int64_t>& lengths,
                                                               int64_t max_sequences,
                                                               int64_t max_tokens);

/// The token cap of an evaluation batch: `configured` when positive, else by device. On the
/// CPU it keeps the pass's widest activation per token (fused q/k/v, the feed-forward's hidden
/// layer, a 256-key block of attention scores per head) within kCpuEvalBatchBytes in float32:
/// such batches stay in cache and reuse the heap, where larger ones are mapped and faulted in
/// afresh on every pass (glibc maps allocations over 32 MiB) and run several times slower. On
/// a GPU: kGpuEvalBatchTokens, large batches that fill the device.
constexpr int64_t kCpuEvalBatchBytes = int64_t{16} << 20;
constexpr int64_t kGpuEvalBatchTokens = 131072;
LENGEN_API int64_t eval_batch_tokens(int64_t configured, const torch::Device& device, const ModelConfig& model);

/// 95% Wilson score interval for k successes out of n.
LENGEN_API std::pair<double, double> wilson_interval(int64_t k, int64_t n);

/// The example with its loss mask narrowed to the final answer: [answer_begin, T-1), EOS out.
LENGEN_API Example answer_only(const Example& ex);

/// Answer-only match of a generated response: the reference answer's tokens must be the
/// generated tokens just before the first EOS (a response without EOS does not match). With a
/// `separator` (>= 0; the evaluator passes the non-digit token that precedes the reference
/// answer, e.g. the scratchpad's '>'), the answer is exactly the tokens between the last
/// separator and EOS (Cho et al. 2025, App. C), so a longer final number does not match.
LENGEN_API bool answer_match(const Example& ex, const std::vector<int64_t>& response, int64_t eos,
                             int64_t separator = -1);

/// Exact match under greedy decoding, decided by one teacher-forced forward pass in the
/// model's layout (Objective): a greedy decode reproduces the reference exactly iff at every
/// response position the argmax of the logits given the reference prefix is the reference
/// token (then the decode's prefixes are the reference's prefixes, by induction). Examples
/// are sorted by length and cut into batches of at most `batch_size` sequences and
/// `batch_tokens` padded tokens (eval_batches; 0: by device and model, eval_batch_tokens).
LENGEN_API std::vector<bool> teacher_forced_exact_match(Transformer& model,
                                                        const Task& task,
                                                        const std::vector<Example>& examples,
                                                        const torch::Device& device,
                                                        int64_t batch_size,
                                                        int64_t batch_tokens = 0);

/// The same pass, saying for each example where it first goes wrong (position -1: correct).
LENGEN_API std::vector<FirstError> teacher_forced_first_errors(Transformer& model,
                                                               const Task& task,
                                                               const std::vector<Example>& examples,
                                                               const torch::Device& device,
                                                               int64_t batch_size,
                                                               int64_t batch_tokens = 0);

/// Greedy KV-cached decoding of one prompt per row (all prompts the same length), for the
/// autoregressive architectures (decoder; encoder_decoder: the encoder reads the prompt and
/// is run once, the decoder starts from the prompt's last token). New tokens'
/// position IDs come from task.causal_position_ids over the prompt and the generated prefix
/// only. Returns the generated responses (EOS included when produced); when `ids_out` is
/// given it receives the IDs fed for each sequence (prompt + response tokens fed back).
LENGEN_API std::vector<std::vector<int64_t>> greedy_decode(
    Transformer& model,
    const Task& task,
    const std::vector<std::vector<int64_t>>& prompts,
    const torch::Device& device,
    std::vector<PositionIds>* ids_out = nullptr);

/// Evaluates every cell of the grid (N samples each, seeded by (eval seed, cell)) and
/// returns one result per cell. `progress` is called after each cell.
LENGEN_API std::vector<CellResult> evaluate_grid(
    Transformer& model,
    const Task& task,
    const EvalConfig& cfg,
    const torch::Device& device,
    const std::function<void(const CellResult&, size_t done, size_t total)>& progress = {});

/// One line saying what a cell's accuracy measures under `cfg` (written to summary.json).
LENGEN_API std::string metric_description(const EvalConfig& cfg);

/// Trained range [lo, hi] of each grid axis that has one (plots outline it).
using TrainedRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

/// The trained ranges of a task's axes (those with train_hi > 0).
LENGEN_API TrainedRanges trained_ranges(const std::vector<GridAxis>& axes);

/// Writes eval/grid.csv and eval/summary.json (atomically) under `dir`; summary.json records
/// the metric and the trained ranges.
LENGEN_API void write_grid_results(const std::string& dir,
                                   const std::vector<CellResult>& results,
                                   const std::vector<std::string>& axes,
                                   const std::string& metric = "exact match of the whole response "
                                                               "under greedy decoding",
                                   const TrainedRanges& trained = {});

}  // namespace lengen
