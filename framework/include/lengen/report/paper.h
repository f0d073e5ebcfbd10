#pragma once

// The paper comparison people look at: the table printed at the end of `lengen run` and by
// `lengen aggregate`, paper.csv and the picture (scripts/plot_paper.py). What is compared is
// eval/paper.h's.

#include "lengen/core/export.h"
#include "lengen/eval/paper.h"

#include <string>
#include <vector>

namespace lengen {

/// Writes `<dir>/paper.csv` (config, label, cell axes, paper, seeds, median, q25, q75, min,
/// max, difference = median - paper; percentages), prints the table (configurations as rows,
/// the paper's cells as columns: "lengen (paper) difference") and, unless `plot_png` is "",
/// draws it there (scripts/plot_paper.py: the paper as markers, lengen's median and spread).
LENGEN_API void report_paper(const PaperReference& paper,
                             const std::vector<PaperCell>& cells,
                             const std::vector<std::string>& cell_axes,
                             const std::string& dir,
                             const std::string& plot_png);

}  // namespace lengen
