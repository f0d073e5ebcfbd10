#include "lengen/eval/paper.h"

#include "lengen/core/error.h"
#include "lengen/core/parse.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace lengen {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "20" or "10, 5" -> "10,5", checked against the grid's axis count.
std::string cell_key(const ConfigNode& key,
                     const std::string& text,
                     const std::vector<std::string>& axes) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text + ",") {
    if (c == ',') {
      parts.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  const std::string expected =
      axes.size() == 1
          ? fmt::format("a {} value", axes[0])
          : fmt::format(
                "{} integers \"a,b\" in the grid's axis order ({})", axes.size(), join(axes, ", "));
  if (parts.size() != axes.size()) {
    key.fail(fmt::format("paper value key '{}': expected {}", text, expected));
  }
  std::string out;
  for (const auto& p : parts) {
    const auto v = leading_integer(p);
    if (!v || v->used != p.size() || v->value < 0) {
      key.fail(fmt::format("paper value key '{}': expected {}", text, expected));
    }
    out += (out.empty() ? "" : ",") + std::to_string(v->value);
  }
  return out;
}

std::vector<std::pair<std::string, double>> read_values(const ConfigNode& node,
                                                        const std::vector<std::string>& axes,
                                                        double scale) {
  if (!node.is_map() || node.size() == 0) {
    node.fail(
        "paper values: a map of grid cell -> accuracy, e.g. {10: 100, 20: 97.5} (~ where the paper "
        "gives none)");
  }
  std::vector<std::pair<std::string, double>> out;
  std::set<std::string> seen;
  for (const auto& k : node.keys()) {
    const ConfigNode v = node.child(k);
    const std::string key = cell_key(node.key_node(k), k, axes);
    if (!seen.insert(key).second)
      node.key_node(k).fail(fmt::format("paper value for cell {} given twice", key));
    if (!v.defined())
      continue;  // ~: not reported (N/A in the paper's table)
    const double x = v.as_float();
    if (!std::isfinite(x) || x < 0 || x > scale) {
      v.fail(fmt::format("paper accuracy {} is outside [0, {}] (unit: {})",
                         x,
                         scale,
                         scale == 1 ? "fraction" : "percent"));
    }
    out.emplace_back(key, x / scale);
  }
  return out;
}

}  // namespace

ComponentSpec PaperReference::schema(bool allow_rows) {
  using O = OptionSpec;
  const auto values = [](std::string doc) {
    return O::any("values", std::move(doc), "map of grid cell -> accuracy");
  };
  ComponentSpec spec{
      "section",
      allow_rows ? "sweep paper" : "paper",
      allow_rows ? "the paper's figures beside a sweep's configurations: `values:` beside every "
                   "one, or `rows:`; `paper: inherit` prints the base experiment's beside each"
                 : "the paper's figures beside the run's: the end of `lengen run` prints both "
                   "with the difference and writes eval/paper.csv and plots/paper.png",
      {O::string("cite", "the paper (authors, year, title or arXiv id)"),
       O::string("table", "where in the paper the figures are (table, figure, section)"),
       O::string("note", "a protocol difference worth printing beside the figures")
           .with_default(std::string("")),
       O::string("unit", "what the values are in")
           .with_default(std::string("percent"))
           .one_of({"percent", "fraction"}),
       O::string("statistic",
                 "what the paper's numbers are over its seeds; lengen's figure in that statistic "
                 "is printed beside the median")
           .with_default(std::string("median"))
           .one_of({"median", "mean", "best"}),
       O::string("label", "the row's label").with_default(std::string("")),
       values("the paper's accuracy per grid cell, e.g. {10: 100, 20: 97.5}; ~ where the paper "
              "gives none")
           .may_be_absent()}};
  if (allow_rows) {
    spec.options.push_back(O::map_list(
        "rows",
        "several rows, each beside the configurations it names",
        {O::string("label", "the row's label; default: row N").with_default(std::string("")),
         O::map("where", "sweep axis -> value: the configurations it stands beside").any_keys(),
         O::string("stage", "the eval stage whose figures it stands beside")
             .with_default(std::string("")),
         values("the paper's accuracy per grid cell")}));
  }
  return spec;
}

PaperReference PaperReference::from_config(const ConfigNode& node,
                                           const std::vector<std::string>& grid_axes,
                                           bool allow_rows) {
  PaperReference p;
  if (!node.defined())
    return p;
  const Options o = Options::validate(schema(allow_rows), node, {});
  p.cite = o.get_string("cite");
  p.table = o.get_string("table");
  p.note = o.get_string("note");
  p.statistic = o.get_string("statistic");
  const double scale = o.get_string("unit") == "percent" ? 100.0 : 1.0;
  const ConfigNode values = o.node("values");
  const ConfigNode rows = allow_rows ? o.node("rows") : ConfigNode();
  if (values.defined() == rows.defined()) {
    node.fail(
        allow_rows
            ? "paper: give 'values:' (one row beside every configuration) or 'rows:' (each with "
              "'where:' and 'values:'), not both"
            : "paper: give 'values:', the paper's accuracy per grid cell");
  }
  if (values.defined()) {
    p.rows.push_back({o.get_string("label"), {}, read_values(values, grid_axes, scale), {}, ""});
    return p;
  }
  if (rows.size() == 0)
    rows.fail("paper.rows: a non-empty list of {label, where, values}");
  const std::vector<Options> entries = o.get_map_list("rows");
  for (size_t i = 0; i < entries.size(); ++i) {
    const Options& rr = entries[i];
    PaperRow row;
    row.label = rr.get_string("label");
    const ConfigNode where = rr.node("where");
    for (const auto& k : where.defined() ? where.keys() : std::vector<std::string>{})
      row.where.emplace_back(k, where.child(k).yaml());
    row.stage = rr.get_string("stage");
    row.values = read_values(rr.node("values"), grid_axes, scale);
    if (row.label.empty())
      row.label = fmt::format("row {}", i + 1);
    p.rows.push_back(std::move(row));
  }
  return p;
}

nlohmann::json PaperReference::to_json() const {
  nlohmann::json rows_j = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& [k, v] : r.values)
      values.push_back({k, v});
    nlohmann::json row{{"label", r.label}, {"configs", r.configs}, {"values", values}};
    if (!r.stage.empty())
      row["stage"] = r.stage;
    rows_j.push_back(std::move(row));
  }
  return {
      {"cite", cite}, {"table", table}, {"note", note}, {"statistic", statistic}, {"rows", rows_j}};
}

PaperReference PaperReference::from_json(const nlohmann::json& j) {
  PaperReference p;
  p.cite = j.value("cite", std::string());
  p.table = j.value("table", std::string());
  p.note = j.value("note", std::string());
  p.statistic = j.value("statistic", std::string("median"));
  for (const auto& r : j.value("rows", nlohmann::json::array())) {
    PaperRow row;
    row.label = r.value("label", std::string());
    row.configs = r.value("configs", std::vector<std::string>());
    row.stage = r.value("stage", std::string());
    for (const auto& kv : r.at("values"))
      row.values.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<double>());
    p.rows.push_back(std::move(row));
  }
  return p;
}

PaperReference PaperReference::of_stage(const std::string& stage) const {
  PaperReference p{cite, table, note, {}, statistic};
  for (const auto& r : rows) {
    if (r.stage == stage)
      p.rows.push_back(r);
  }
  return p;
}

ConfigFigures figures_of_run(const std::string& summary_json,
                             const std::string& config,
                             std::vector<std::string>& axes,
                             std::vector<std::string>& cell_order) {
  std::ifstream in(summary_json);
  LENGEN_CHECK(in.good(), "{}: cannot read (evaluate the run first)", summary_json);
  nlohmann::json sj;
  try {
    sj = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", summary_json, e.what()));
  }
  ConfigFigures f{config, {}};
  axes = sj.at("axes").get<std::vector<std::string>>();
  cell_order.clear();
  for (const auto& c : sj.at("cells")) {
    std::string key;
    for (const auto& a : axes)
      key += (key.empty() ? "" : ",") + std::to_string(c.at(a).get<int64_t>());
    cell_order.push_back(key);
    f.cells[key].push_back(c.at("accuracy").get<double>());
  }
  return f;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double statistic_of(const std::vector<double>& v, const std::string& statistic) {
  if (statistic == "mean") {
    double sum = 0;
    for (double x : v)
      sum += x;
    return sum / static_cast<double>(v.size());
  }
  if (statistic == "best")
    return *std::max_element(v.begin(), v.end());
  return quantile(v, 0.5);
}

std::vector<PaperCell> compare_with_paper(const PaperReference& paper,
                                          const std::vector<ConfigFigures>& figures,
                                          const std::vector<std::string>& cell_order) {
  std::vector<PaperCell> out;
  // Configurations no row stands beside come last, with lengen's figures only.
  std::vector<PaperRow> rows = paper.rows;
  PaperRow rest;
  for (const auto& f : figures) {
    const bool matched = std::any_of(paper.rows.begin(), paper.rows.end(), [&](const PaperRow& r) {
      return r.configs.empty() ||
             std::find(r.configs.begin(), r.configs.end(), f.config) != r.configs.end();
    });
    if (!matched)
      rest.configs.push_back(f.config);
  }
  if (!rest.configs.empty())
    rows.push_back(rest);
  for (const auto& row : rows) {
    std::map<std::string, double> ref(row.values.begin(), row.values.end());
    for (const auto& f : figures) {
      if (!row.configs.empty() &&
          std::find(row.configs.begin(), row.configs.end(), f.config) == row.configs.end()) {
        continue;
      }
      auto add = [&](const std::string& cell) {
        PaperCell c;
        c.config = f.config;
        c.label = row.label;
        c.cell = cell;
        auto r = ref.find(cell);
        c.paper = r == ref.end() ? kNaN : r->second;
        auto it = f.cells.find(cell);
        if (it == f.cells.end() || it->second.empty()) {
          c.median = c.q25 = c.q75 = c.min = c.max = c.mean = c.ours = kNaN;
        } else {
          const auto& v = it->second;
          c.seeds = static_cast<int64_t>(v.size());
          c.median = quantile(v, 0.5);
          c.q25 = quantile(v, 0.25);
          c.q75 = quantile(v, 0.75);
          c.min = *std::min_element(v.begin(), v.end());
          c.max = *std::max_element(v.begin(), v.end());
          c.mean = statistic_of(v, "mean");
          c.ours = statistic_of(v, paper.statistic);
        }
        out.push_back(c);
      };
      for (const auto& cell : cell_order) {
        if (f.cells.count(cell))
          add(cell);
      }
      for (const auto& [cell, v] : row.values) {
        if (!f.cells.count(cell))
          add(cell);
      }
    }
  }
  return out;
}

}  // namespace lengen
