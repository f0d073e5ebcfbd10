// A sweep's `paper:` rows resolved to the configurations each stands beside (paper_rows.h).
#include "paper_rows.h"

#include "util.h"

#include "lengen/core/error.h"
#include "lengen/core/log.h"

#include <algorithm>

namespace lengen::sweep {

namespace {

// Whether a point's values satisfy a paper row's `where:`: each key is a sweep axis whose value
// (point_value) matches (value_matches), written as a value or as its `labels:` name.
bool paper_row_matches(const PaperRow& row,
                       const std::vector<std::pair<std::string, YAML::Node>>& values,
                       const YAML::Node& resolved,
                       const std::vector<std::string>& axes,
                       const ConfigNode& row_node,
                       const std::map<std::string, std::map<std::string, std::string>>& labels) {
  for (const auto& kw : row.where) {
    const std::string& k = kw.first;
    const YAML::Node& want = kw.second;
    if (std::find(axes.begin(), axes.end(), k) == axes.end()) {
      row_node.child("where").key_node(k).fail(
          fmt::format("paper row '{}': '{}' is not an axis of this sweep (axes: {})",
                      row.label,
                      k,
                      join(axes, ", ")));
    }
    const YAML::Node have = point_value(values, resolved, k);
    if (!have.IsDefined() || !value_matches(resolve_label(labels, k, want), have))
      return false;
  }
  return true;
}

}  // namespace

// The sweep's `paper:` rows; or the base experiment's values, which describe the base's
// configuration: beside every configuration only when the sweep varies nothing but the seed,
// or when the sweep opts in with `paper: inherit`. `e` is the first point's experiment.
PaperReference sweep_paper(const Sweep& s,
                           const ConfigNode& paper,
                           const Experiment& e,
                           const std::map<std::string, std::set<std::string>>& distinct) {
  // The sweep's `paper:` rows; or the base experiment's values, which describe the base's
  // configuration: beside every configuration only when the sweep varies nothing but the
  // seed, or when the sweep opts in with `paper: inherit`.
  const bool inherit = paper.is_scalar() && paper.as_string() == "inherit";
  if (paper.defined() && !inherit) {
    return PaperReference::from_config(paper, e.eval.axes(), true);
  } else {
    std::vector<std::string> varied;
    for (const auto& [k, values] : distinct) {
      if (k != "seed" && values.size() > 1)
        varied.push_back(k);
    }
    if (inherit || varied.empty()) {
      return e.paper;
    } else if (!e.paper.empty()) {
      logger("sweep")->info(
          "{}: the base experiment's paper: figures ({}, {}) describe its own configuration; "
          "not printed beside a sweep that varies {} (write `paper: inherit` to print them "
          "beside every configuration, or give `paper: rows:` with `where:`)",
          s.name,
          e.paper.cite,
          e.paper.table,
          join(varied, ", "));
    }
  }
  return {};
}

// Adds point `p`'s configuration to each paper row it matches (`values` are its varied
// values), checking that a row's `stage:` is an evaluating stage of the point.
void match_paper_rows(const Sweep& s,
                      const ConfigNode& paper,
                      const std::vector<std::pair<std::string, YAML::Node>>& values,
                      const Point& p,
                      const Experiment& e,
                      std::vector<std::vector<std::string>>& row_configs) {
  const YAML::Node resolved = YAML::Load(p.resolved);
  for (size_t ri = 0; ri < s.paper.rows.size(); ++ri) {
    const ConfigNode row_node = paper.child("rows").at(ri);
    if (!paper_row_matches(s.paper.rows[ri], values, resolved, s.axes, row_node, s.labels))
      continue;
    const std::string& stage = s.paper.rows[ri].stage;
    if (!stage.empty() && std::none_of(e.stages.begin(), e.stages.end(), [&](const StageSpec& st) {
          return st.name == stage && st.evaluates;
        })) {
      row_node.child("stage").fail(
          fmt::format("paper row '{}': point {} has no evaluating stage '{}' (the "
                      "row stands beside RUN/stages/{}/eval)",
                      s.paper.rows[ri].label,
                      p.name,
                      stage,
                      stage));
    }
    if (std::find(row_configs[ri].begin(), row_configs[ri].end(), p.config_name) ==
        row_configs[ri].end()) {
      row_configs[ri].push_back(p.config_name);
    }
  }
}

// Every `where:` row matches some configuration, and no configuration two rows.
void check_paper_rows(Sweep& s,
                      const ConfigNode& paper,
                      const std::vector<std::vector<std::string>>& row_configs) {
  std::map<std::string, std::string> row_of;
  for (size_t ri = 0; ri < s.paper.rows.size(); ++ri) {
    PaperRow& row = s.paper.rows[ri];
    if (row.where.empty())
      continue;  // beside every configuration
    const ConfigNode where = paper.child("rows").at(ri).child("where");
    if (row_configs[ri].empty()) {
      where.fail(
          fmt::format("paper row '{}' matches no configuration of the sweep (a value is matched as "
                      "written on the axis, by its component name, or by its `labels:` name)",
                      row.label));
    }
    for (const auto& c : row_configs[ri]) {
      // One row per configuration and evaluation (the run's own, or an eval stage's).
      const std::string key = row.stage + "\n" + c;
      if (!row_of.emplace(key, row.label).second) {
        where.fail(fmt::format(
            "configuration {} matches two paper rows: '{}' and '{}'", c, row_of[key], row.label));
      }
    }
    row.configs = row_configs[ri];
  }
}

}  // namespace lengen::sweep
