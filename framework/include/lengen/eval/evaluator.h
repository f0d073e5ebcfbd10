#pragma once

// The grid evaluation (evaluate_grid) and its answer metrics. Its results and their files:
// grid_results.h; the teacher-forced verdict and the batches: teacher_forced.h. Decoding is
// the architecture's (model/architecture.h). src/eval/evaluator.cpp.

#include "lengen/core/export.h"
#include "lengen/eval/config.h"
#include "lengen/eval/grid_results.h"
#include "lengen/eval/teacher_forced.h"
#include "lengen/model/architecture.h"
#include "lengen/model/transformer.h"
#include "lengen/task/task.h"

#include <torch/types.h>

#include <functional>
#include <string>
#include <vector>

namespace lengen {

/// The example with its loss mask narrowed to the final answer: [answer_begin, T-1), EOS out.
LENGEN_API Example answer_only(const Example& ex);

/// Answer-only match of a generated response: the reference answer's tokens must be the
/// generated tokens just before the first EOS (a response without EOS does not match). With a
/// `separator` (>= 0; the evaluator passes the non-digit token that precedes the reference
/// answer, e.g. the scratchpad's '>'), the answer is exactly the tokens between the last
/// separator and EOS (Cho et al. 2025, App. C), so a longer final number does not match.
LENGEN_API bool answer_match(const Example& ex,
                             const std::vector<int64_t>& response,
                             int64_t eos,
                             int64_t separator = -1);

/// A cell's eval.samples samples, drawn from a generator seeded by (eval seed, cell): the same
/// samples every time, whatever else is evaluated. What evaluate_grid evaluates.
LENGEN_API std::vector<Example> cell_samples(const Task& task,
                                             const EvalConfig& cfg,
                                             const GridCell& cell);

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

}  // namespace lengen
