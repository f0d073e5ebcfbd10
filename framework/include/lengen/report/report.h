#pragma once

// Reports people look at: the evaluation table, results files, TensorBoard records and the
// pictures drawn by the plotting scripts (scripts/plot_*.py, Debian's python3-matplotlib).
// Commands and stages share these; nothing here decides what is measured.

#include "lengen/core/export.h"
#include "lengen/eval/evaluator.h"
#include "lengen/model/transformer.h"
#include "lengen/report/plot.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace lengen {

struct Experiment;
class EventWriter;

/// "digits=12 operands=3" (sep " ") or "digits=12,operands=3" (sep ",").
LENGEN_API std::string cell_text(const GridCell& cell, const char* sep = " ");

/// Prints the accuracy table of a grid evaluation to stdout.
LENGEN_API void print_table(const std::vector<CellResult>& results,
                            const std::vector<std::string>& axes);

/// `s` as one CSV field: as it is, or quoted (inner quotes doubled) when it holds a comma,
/// a quote or a newline.
LENGEN_API std::string csv_field(const std::string& s);

/// Evaluates `model` on `cfg`'s grid (progress logged per cell) and writes the report under
/// `dir`: eval/grid.csv, eval/summary.json, the printed table, plots/grid.png and TensorBoard
/// scalars (eval/accuracy/<cell>, eval/mean_accuracy) and image at `step`.
LENGEN_API std::vector<CellResult> evaluate_and_report(Transformer& model,
                                                       const Experiment& exp,
                                                       const EvalConfig& cfg,
                                                       const torch::Device& device,
                                                       const std::string& dir,
                                                       int64_t step);

/// Appends one evaluation during training to `path` (JSON lines: step, mean accuracy, one
/// entry per cell) and logs it to TensorBoard under curve/accuracy/<cell>.
LENGEN_API void append_eval_curve(const std::string& path,
                                  int64_t step,
                                  const std::vector<CellResult>& results,
                                  EventWriter* tensorboard);

/// Draws `eval_curve.jsonl` as accuracy-over-steps curves, one line per grid cell.
LENGEN_API void plot_eval_curve(const std::string& jsonl,
                                const std::string& png,
                                const std::string& title);

/// Logs an aggregate folder that sweep::aggregate (or compare_runs) wrote under DIR/aggregate,
/// or under out_dir where given (sweep::aggregate_dir), and, when `plots`, draws its heatmaps
/// (scripts/plot_sweep.py) and the paper's comparison; the paper's title comes from DIR/sweep.json.
LENGEN_API void report_aggregate(const std::string& dir,
                                 int64_t n,
                                 bool plots,
                                 const std::string& out_dir = "");

}  // namespace lengen
