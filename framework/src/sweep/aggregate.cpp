// Aggregating a sweep: median / quartiles / fraction of seeds per configuration and cell, heatmaps,
// the paper comparison; compare over run folders.
#include "util.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/report/paper.h"
#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace lengen::sweep {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------
// Aggregation

bool is_eval_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

namespace {

// The evaluation of each run that aggregate() reads, relative to the run directory: eval/ (the
// run's own), evals/<name>/eval (`lengen eval --out`) or stages/<name>/eval (an eval stage); where
// its aggregate goes below <sweep>/aggregate (empty: there), and how to write a missing one.
struct EvalSource {
  RunDir
      folder;  // relative to the run directory: "" (the run's own), evals/<name> or stages/<name>
  std::string fix;

  bool variant() const { return !folder.root().empty(); }

  /// eval/, relative to the run directory, for messages.
  fs::path rel() const { return folder.eval(); }

  /// The summary.json of the run at `run_dir`.
  fs::path summary(const fs::path& run_dir) const {
    return RunDir(run_dir / folder.root()).summary();
  }
};

EvalSource eval_source(const std::string& eval_name, const std::string& stage_name) {
  LENGEN_CHECK(eval_name.empty() || stage_name.empty(),
               "aggregate: --eval '{}' and --stage '{}' name two evaluations; give one",
               eval_name,
               stage_name);
  EvalSource s;
  if (!eval_name.empty()) {
    LENGEN_CHECK(is_eval_name(eval_name),
                 "aggregate --eval '{}': a name of RUN/evals/, not a path",
                 eval_name);
    s.folder = RunDir().named_eval(eval_name);
    s.fix =
        fmt::format("write it for each run with `lengen eval RUN --out {} --set ...`", eval_name);
  } else if (!stage_name.empty()) {
    LENGEN_CHECK(is_eval_name(stage_name),
                 "aggregate --stage '{}': a name of RUN/stages/, not a path",
                 stage_name);
    s.folder = RunDir().stage(stage_name);
    s.fix = fmt::format(
        "'{}' must be a stage of kind eval in the sweep's experiment (docs/stages.md)", stage_name);
  }
  return s;
}

}  // namespace

std::string aggregate_dir(const std::string& sweep_dir,
                          const std::string& eval_name,
                          const std::string& stage_name) {
  const fs::path out = fs::path(sweep_dir) / "aggregate";
  const EvalSource source = eval_source(eval_name, stage_name);
  return (source.variant() ? out / source.folder.root() : out).string();
}

namespace {

// What aggregate() reads of the points' summaries.
struct Collected {
  std::vector<std::string> cell_axes;
  std::string results;  // results.csv: one row per point and cell
  // config -> cell key -> accuracies over seeds; config -> varied values; the orders seen.
  std::map<std::string, std::map<std::string, std::vector<double>>> acc;
  std::map<std::string, std::vector<std::string>> config_values;
  std::vector<std::string> config_order, cell_order;
  json trained = json::object();  // the first point's trained ranges (plots outline them)
  int64_t read = 0;
  std::vector<std::string> missing;  // finished points without the named evaluation
};

// Adds one point's summary.json `sj` to `c` (results.csv's rows, the accuracies).
void collect_point(Collected& c,
                   const json& p,
                   const json& sj,
                   const std::vector<std::string>& varied_keys,
                   std::map<std::string, std::vector<int64_t>>& cell_values) {
  const std::string name = p["name"];
  if (c.read == 0) {
    c.cell_axes = sj["axes"].get<std::vector<std::string>>();
    c.trained = sj.value("trained", json::object());
    for (const auto& a : c.cell_axes)
      c.results += "," + a;
    c.results += ",samples,correct,accuracy,ci_low,ci_high\n";
  }
  const std::string config = p["config"];
  if (!c.acc.count(config)) {
    c.config_order.push_back(config);
    std::vector<std::string> vals;
    for (const auto& k : varied_keys)
      vals.push_back(p["varied"].value(k, std::string()));
    c.config_values[config] = vals;
  }
  std::string prefix =
      fmt::format("{},{},{}", csv_field(name), csv_field(config), p["seed"].get<int64_t>());
  for (const auto& k : varied_keys)
    prefix += "," + csv_field(p["varied"].value(k, std::string()));
  for (const auto& cell : sj["cells"]) {
    std::vector<int64_t> coords;
    std::string key;
    for (const auto& a : c.cell_axes) {
      coords.push_back(cell[a].get<int64_t>());
      key += (key.empty() ? "" : ",") + std::to_string(coords.back());
    }
    if (!cell_values.count(key)) {
      c.cell_order.push_back(key);
      cell_values[key] = coords;
    }
    const double a = cell["accuracy"].get<double>();
    c.acc[config][key].push_back(a);
    c.results += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f}\n",
                             prefix,
                             key,
                             cell["samples"].get<int64_t>(),
                             cell["correct"].get<int64_t>(),
                             a,
                             cell["ci95"][0].get<double>(),
                             cell["ci95"][1].get<double>());
  }
  ++c.read;
}

// Every point of the manifest `m` with the evaluation `source` names.
Collected collect_points(const json& m,
                         const fs::path& sweep_dir,
                         const fs::path& manifest_path,
                         const EvalSource& source,
                         const std::vector<std::string>& varied_keys) {
  Collected c;
  c.results = "point,config,seed";
  for (const auto& k : varied_keys)
    c.results += "," + csv_field(k);
  std::map<std::string, std::vector<int64_t>> cell_values;
  std::set<std::string> seen_points;
  for (const auto& p : m["points"]) {
    const fs::path run_dir = sweep_dir / p["run_dir"].get<std::string>();
    const fs::path summary = source.summary(run_dir);
    if (!fs::exists(summary)) {
      if (source.variant() && fs::exists(RunDir(run_dir).summary()))
        c.missing.push_back(p["name"].get<std::string>());
      continue;
    }
    const std::string name = p["name"];
    LENGEN_CHECK(seen_points.insert(name).second,
                 "point {} appears twice in {}",
                 name,
                 manifest_path.string());
    collect_point(c, p, json::parse(read_text(summary.string())), varied_keys, cell_values);
  }
  if (c.read == 0)
    c.results += ",samples,correct,accuracy,ci_low,ci_high\n";
  return c;
}

// summary.csv: per configuration and cell, the statistics over seeds.
std::string summary_csv(const Collected& c,
                        const std::vector<std::string>& varied_keys,
                        double threshold) {
  std::string summary = "config";
  for (const auto& k : varied_keys)
    summary += "," + csv_field(k);
  for (const auto& a : c.cell_axes)
    summary += "," + a;
  summary += ",seeds,median,q25,q75,iqr,frac_above,min,max\n";
  for (const auto& config : c.config_order) {
    const auto& by_cell = c.acc.at(config);
    for (const auto& key : c.cell_order) {
      auto it = by_cell.find(key);
      if (it == by_cell.end())
        continue;
      const auto& v = it->second;
      const double above = static_cast<double>(std::count_if(
                               v.begin(), v.end(), [&](double x) { return x >= threshold; })) /
                           static_cast<double>(v.size());
      std::string row = csv_field(config);
      for (const auto& val : c.config_values.at(config))
        row += "," + csv_field(val);
      summary += fmt::format("{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f}\n",
                             row,
                             key,
                             v.size(),
                             quantile(v, 0.5),
                             quantile(v, 0.25),
                             quantile(v, 0.75),
                             quantile(v, 0.75) - quantile(v, 0.25),
                             above,
                             *std::min_element(v.begin(), v.end()),
                             *std::max_element(v.begin(), v.end()));
    }
  }
  return summary;
}

}  // namespace

int64_t aggregate(const std::string& sweep_dir,
                  double threshold,
                  const std::string& eval_name,
                  const std::string& stage_name) {
  const fs::path manifest_path = fs::path(sweep_dir) / "sweep.json";
  LENGEN_CHECK(fs::exists(manifest_path),
               "{}: not a sweep folder (no sweep.json; run `lengen sweep FILE` first)",
               sweep_dir);
  const EvalSource source = eval_source(eval_name, stage_name);
  json m = json::parse(read_text(manifest_path.string()));
  if (threshold < 0)
    threshold = m.value("threshold", 0.9);
  std::vector<std::string> axes = m["axes"].get<std::vector<std::string>>();
  std::vector<std::string> varied_keys;
  for (const auto& a : axes) {
    if (a != "seed")
      varied_keys.push_back(a);
  }
  const Collected c = collect_points(m, sweep_dir, manifest_path, source, varied_keys);
  if (source.variant()) {
    LENGEN_CHECK(c.read > 0,
                 "{}: no point has {}/summary.json; {}",
                 sweep_dir,
                 source.rel().string(),
                 source.fix);
    if (!c.missing.empty()) {
      logger("sweep")->warn("{} finished point(s) have no {} and are left out: {}",
                            c.missing.size(),
                            source.rel().string(),
                            fmt::format("{}", fmt::join(c.missing, "; ")));
    }
  }
  const fs::path out = aggregate_dir(sweep_dir, eval_name, stage_name);
  fs::create_directories(out);
  write_file_atomic((out / "results.csv").string(), c.results);
  write_file_atomic((out / "summary.csv").string(), summary_csv(c, varied_keys, threshold));
  // The paper's rows for this evaluation: those of the named eval stage, or those without one.
  const PaperReference paper = m.contains("paper")
                                   ? PaperReference::from_json(m["paper"]).of_stage(stage_name)
                                   : PaperReference{};
  if (!paper.empty() && c.read > 0) {
    std::vector<ConfigFigures> figures;
    for (const auto& config : c.config_order)
      figures.push_back({config, c.acc.at(config)});
    report_paper(
        paper, compare_with_paper(paper, figures, c.cell_order), c.cell_axes, out.string(), "");
  }
  json meta{{"threshold", threshold},
            {"cell_axes", c.cell_axes},
            {"varied", varied_keys},
            {"configs", c.config_order},
            {"trained", c.trained},
            {"points_read", c.read},
            {"points", m["points"].size()}};
  write_file_atomic((out / "aggregate.json").string(), meta.dump(2) + "\n");
  return c.read;
}

int64_t compare_runs(const std::vector<std::string>& run_dirs,
                     const std::string& out_dir,
                     double threshold) {
  LENGEN_CHECK(!run_dirs.empty(), "compare: no run directories given");
  json points = json::array();
  std::set<std::string> names;
  std::vector<std::string> first_axes;
  PaperReference paper;  // the runs' `paper:` blocks, a row per configuration that has one
  std::set<std::string> paper_configs;
  for (const auto& dir : run_dirs) {
    const fs::path run = fs::absolute(dir).lexically_normal();
    const fs::path config = RunDir(run).config(), summary = RunDir(run).summary();
    LENGEN_CHECK(fs::exists(config), "{}: not a run directory (no config.yaml)", dir);
    LENGEN_CHECK(fs::exists(summary),
                 "{}: has not been evaluated (no eval/summary.json; run `lengen eval {}`)",
                 dir,
                 dir);
    YAML::Node c = YAML::LoadFile(config.string());
    const std::string name =
        c["name"] ? c["name"].as<std::string>() : run.parent_path().filename().string();
    const int64_t seed = c["seed"] ? c["seed"].as<int64_t>() : 0;
    const auto axes =
        json::parse(read_text(summary.string()))["axes"].get<std::vector<std::string>>();
    if (first_axes.empty())
      first_axes = axes;
    LENGEN_CHECK(axes == first_axes,
                 "{}: evaluated over ({}) but {} over ({}); compare runs of one grid",
                 dir,
                 fmt::format("{}", fmt::join(axes, ", ")),
                 run_dirs.front(),
                 fmt::format("{}", fmt::join(first_axes, ", ")));
    if (c["paper"]) {
      const ConfigNode node = load_config_file(config.string()).child("paper");
      PaperReference theirs = PaperReference::from_config(node, axes, false);
      if (paper.empty()) {
        paper.cite = theirs.cite;
        paper.table = theirs.table;
        paper.note = theirs.note;
      }
      if (theirs.cite != paper.cite || theirs.table != paper.table) {
        logger("sweep")->warn(
            "{}: its paper: block cites '{}, {}', the first run's '{}, {}'; only the first's "
            "figures are compared",
            dir,
            theirs.cite,
            theirs.table,
            paper.cite,
            paper.table);
      } else if (paper_configs.insert(name).second) {
        PaperRow row = theirs.rows.front();
        row.label = row.label.empty() ? name : row.label;
        row.configs = {name};
        paper.rows.push_back(row);
      }
    }
    std::string point = fmt::format("{},seed={}", name, seed);
    LENGEN_CHECK(names.insert(point).second,
                 "{}: a second run of '{}' with seed {}; give each run once",
                 dir,
                 name,
                 seed);
    points.push_back({{"index", points.size()},
                      {"name", point},
                      {"config", name},
                      {"seed", seed},
                      {"run_dir", run.string()},
                      {"varied", {{"run", name}}}});
  }
  json manifest{
      {"name", "compare"}, {"axes", {"run", "seed"}}, {"threshold", threshold}, {"points", points}};
  if (!paper.empty())
    manifest["paper"] = paper.to_json();
  fs::create_directories(out_dir);
  write_file_atomic((fs::path(out_dir) / "sweep.json").string(), manifest.dump(2) + "\n");
  return aggregate(out_dir, threshold);
}

}  // namespace lengen::sweep
