#pragma once
// A sweep's `paper:` rows resolved to the configurations each stands beside (load.cpp reads
// the file; paper_rows.cpp). Not installed.
#include "lengen/config/node.h"
#include "lengen/eval/paper.h"
#include "lengen/experiment/experiment.h"
#include "lengen/sweep/sweep.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lengen::sweep {

/// The sweep's `paper:` rows; or the base experiment's values, which describe the base's
/// configuration: beside every configuration only when the sweep varies nothing but the seed
/// (`distinct`: each key's distinct values), or when the sweep opts in with `paper: inherit`.
/// `e` is the first point's experiment.
PaperReference sweep_paper(const Sweep& s,
                           const ConfigNode& paper,
                           const Experiment& e,
                           const std::map<std::string, std::set<std::string>>& distinct);

/// Adds point `p`'s configuration to each paper row it matches (`values` are its varied
/// values), checking that a row's `stage:` is an evaluating stage of the point.
void match_paper_rows(const Sweep& s,
                      const ConfigNode& paper,
                      const std::vector<std::pair<std::string, YAML::Node>>& values,
                      const Point& p,
                      const Experiment& e,
                      std::vector<std::vector<std::string>>& row_configs);

/// Every `where:` row matches some configuration, and no configuration two rows.
void check_paper_rows(Sweep& s,
                      const ConfigNode& paper,
                      const std::vector<std::vector<std::string>>& row_configs);

}  // namespace lengen::sweep
