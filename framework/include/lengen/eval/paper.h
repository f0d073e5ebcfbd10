#pragma once

// A paper's reference figures: the `paper:` block of an experiment or sweep file (which paper,
// which table or figure, its numbers per grid cell and configuration), and their pairing with
// lengen's figures over seeds. report/paper.h prints, writes and draws the result (`lengen
// run`, `lengen aggregate`, `lengen compare`); docs/sweeps.md has the format.
//
//   paper:
//     cite: "Cho et al. 2024, Position Coupling"
//     table: "Figure 3"
//     note: "read off the figure"          # optional: how the numbers were obtained
//     unit: percent                        # or fraction
//     statistic: mean                      # what the paper's numbers are over its seeds: mean,
//                                          # median (default) or best; lengen's figure in the
//                                          # same statistic is printed beside its median
//     values: {10: 100, 20: 99.5, 30: ~}   # one row (an experiment, or every configuration)
//     rows:                                # a sweep: one row per configuration of the paper
//       - {label: "coupling + scratchpad", where: {position: coupling, task.scratchpad: true},
//          values: {"10,2": 100, "30,30": 90}}   # 2-axis grids: "a,b" in the grid's axis order
//       - {label: "vanilla", stage: vanilla, values: {6: 100, 10: 0}}   # an eval stage's figures

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"

#include <nlohmann/json_fwd.hpp>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

struct PaperRow {
  std::string label;
  /// `where:` as written: sweep axis -> value (sweeps only; empty: every configuration).
  std::vector<std::pair<std::string, YAML::Node>> where;
  /// Cell key ("20", or "10,5" in the grid's axis order) -> accuracy in [0, 1], in file order.
  std::vector<std::pair<std::string, double>> values;
  /// The configurations (sweep point names without the seed) this row stands beside; filled
  /// by the sweep planner from `where:`. Empty in an experiment: the run itself.
  std::vector<std::string> configs;
  /// `stage:` (sweeps only): the eval stage whose figures this row stands beside, compared by
  /// `lengen aggregate --stage NAME`; empty: the run's own evaluation.
  std::string stage;
};

struct LENGEN_API PaperReference {
  std::string cite, table, note;
  std::vector<PaperRow> rows;
  /// The paper's statistic over its seeds: "median", "mean" or "best" (the maximum).
  std::string statistic = "median";

  bool empty() const { return rows.empty(); }

  /// The same reference with only the rows of `stage` ("": the run's own evaluation).
  PaperReference of_stage(const std::string& stage) const;

  /// The keys of a `paper:` block (with `rows:` in a sweep file).
  static ComponentSpec schema(bool allow_rows);

  /// Reads a `paper:` block. `grid_axes` are the evaluation grid's axes (a value's key has one
  /// integer per axis); `allow_rows` is true for sweeps (`rows:` with `where:`), false for an
  /// experiment (`values:` only). Errors name the file, line and key.
  static PaperReference from_config(const ConfigNode& node,
                                    const std::vector<std::string>& grid_axes,
                                    bool allow_rows);

  nlohmann::json to_json() const;
  static PaperReference from_json(const nlohmann::json& j);
};

/// lengen's figures for one configuration: cell key -> accuracy of each seed.
struct ConfigFigures {
  std::string config;
  std::map<std::string, std::vector<double>> cells;
};

/// One run's figures from its eval/summary.json, as configuration `config` with one seed;
/// `axes` and `cell_order` receive the grid's axes and its cells in evaluation order.
LENGEN_API ConfigFigures figures_of_run(const std::string& summary_json,
                                        const std::string& config,
                                        std::vector<std::string>& axes,
                                        std::vector<std::string>& cell_order);

/// One line of the comparison: a configuration at a cell, with the paper's figure (NaN where
/// the paper gives none) and lengen's over seeds (seeds 0 and NaNs where not evaluated).
struct PaperCell {
  std::string config, label, cell;
  double paper = 0;
  int64_t seeds = 0;
  double median = 0, q25 = 0, q75 = 0, min = 0, max = 0;
  double mean = 0;
  /// lengen's figure in the paper's statistic (PaperReference::statistic): the median, the mean
  /// or the maximum over seeds; NaN where not evaluated.
  double ours = 0;
};

/// `v`'s value in a paper's statistic ("median", "mean", "best"); v non-empty.
LENGEN_API double statistic_of(const std::vector<double>& v, const std::string& statistic);

/// Linear-interpolated quantile of `v` (non-empty), q in [0, 1].
LENGEN_API double quantile(std::vector<double> v, double q);

/// Pairs each configuration's cells with the paper's: every evaluated cell of a configuration
/// a row stands beside (paper NaN where it gives no number), then the paper's cells the grid
/// did not evaluate; then the configurations no row stands beside, with lengen's figures only
/// (label ""). Cells come in `cell_order`; configurations in the rows' order, then `figures`'.
LENGEN_API std::vector<PaperCell> compare_with_paper(const PaperReference& paper,
                                                     const std::vector<ConfigFigures>& figures,
                                                     const std::vector<std::string>& cell_order);

}  // namespace lengen
