// Reading a sweep file into validated points: the file's keys (sweep_schema), grid x zip +
// points, their names and folders, and the paper rows each configuration stands beside.
#include "paper_rows.h"
#include "util.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/sweep/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

namespace fs = std::filesystem;

namespace lengen::sweep {

namespace {

// The short form of a key for names: its last component.
std::string short_key(const std::string& key) {
  auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// One axis: a key (or several, for a zip group) and its values.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<YAML::Node>> values;  // values[i][k]: i-th value of keys[k]
  ConfigNode where;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Planning

namespace {

// The sweep file with `--set` applied.
ConfigNode load_sweep_file(const std::string& path, const std::vector<std::string>& overrides) {
  // `--set set.model.layers=6` means "model.layers: 6 for every point": the rest of the key
  // after `set.` (or `grid.`) is one key of that map, as a sweep file writes it. Walked as a
  // path it would nest `set: {model: {layers: 6}}`, whose map then replaces the base's whole
  // `model:` section.
  std::vector<std::string> plain;
  std::vector<std::tuple<std::string, std::string, std::string>>
      section_keys;  // section, key, value
  for (const auto& text : overrides) {
    const auto eq = text.find('='), dot = text.find('.');
    const std::string section = text.substr(0, dot);
    if (eq != std::string::npos && dot + 1 < eq && (section == "set" || section == "grid")) {
      section_keys.emplace_back(section, text.substr(dot + 1, eq - dot - 1), text.substr(eq + 1));
    } else {
      plain.push_back(text);
    }
  }
  ConfigNode root = apply_overrides(load_config_file(path), plain);
  for (const auto& [section, key, value] : section_keys) {
    YAML::Node parsed;
    try {
      parsed = load_config_string(value, fmt::format("--set {}.{}={}", section, key, value)).yaml();
    } catch (const Error& e) {
      throw Error(fmt::format(
          "--set {}.{}={}: the value is not valid YAML ({})", section, key, value, e.what()));
    }
    YAML::Node tree = root.yaml();
    if (tree[section].IsDefined() && !tree[section].IsNull() && !tree[section].IsMap()) {
      throw Error(
          fmt::format("--set {}.{}: '{}:' in {} is not a map", section, key, section, path));
    }
    tree[section][key] = parsed;
  }
  return root;
}

// The axes: the grid's keys (first slowest), then the zip groups; `sweep_axes` gets every
// varied key in file order.
std::vector<Axis> read_axes(const ConfigNode& grid,
                            const ConfigNode& zip,
                            std::vector<std::string>& sweep_axes) {
  std::vector<Axis> axes;
  if (grid.defined()) {
    if (!grid.is_map())
      grid.fail("'grid:' is a map of key: [values]");
    for (const auto& k : grid.keys()) {
      ConfigNode v = grid.child(k);
      if (!v.is_sequence() || v.size() == 0)
        v.fail("a grid axis is a non-empty list of values");
      Axis a{{k}, {}, v};
      for (size_t i = 0; i < v.size(); ++i)
        a.values.push_back({v.at(i).yaml()});
      axes.push_back(std::move(a));
    }
  }
  if (zip.defined()) {
    if (!zip.is_sequence())
      zip.fail("'zip:' is a list of groups, each a map of key: [values] of one length");
    for (size_t g = 0; g < zip.size(); ++g) {
      ConfigNode group = zip.at(g);
      if (!group.is_map() || group.size() == 0)
        group.fail("a zip group is a map of key: [values]");
      Axis a{group.keys(), {}, group};
      size_t n = 0;
      for (const auto& k : a.keys) {
        ConfigNode v = group.child(k);
        if (!v.is_sequence() || v.size() == 0)
          v.fail("a zip member is a non-empty list of values");
        if (n == 0)
          n = v.size();
        if (v.size() != n) {
          v.fail(
              fmt::format("zip members vary together and need equal lengths: {} has {} values, "
                          "the first member {}",
                          k,
                          v.size(),
                          n));
        }
      }
      for (size_t i = 0; i < n; ++i) {
        std::vector<YAML::Node> row;
        for (const auto& k : a.keys)
          row.push_back(group.child(k).at(i).yaml());
        a.values.push_back(row);
      }
      axes.push_back(std::move(a));
    }
  }
  std::set<std::string> seen_keys;
  for (const auto& a : axes) {
    for (const auto& k : a.keys) {
      if (!seen_keys.insert(k).second)
        a.where.fail(fmt::format("the key '{}' is varied twice", k));
      sweep_axes.push_back(k);
    }
  }
  return axes;
}

// `labels:`: names for the values of an axis, used in point names instead of the values
// themselves (a list of mixture sources reads better as `mixture=primers-1pct`).
// key -> flow(value) -> label.
std::map<std::string, std::map<std::string, std::string>> read_labels(
    const ConfigNode& labels, const std::vector<Axis>& axes) {
  std::map<std::string, std::map<std::string, std::string>> value_labels;
  if (labels.defined()) {
    if (!labels.is_map())
      labels.fail("'labels:' is a map of key: [one name per value of that axis]");
    for (const auto& k : labels.keys()) {
      const ConfigNode names = labels.child(k);
      const Axis* axis = nullptr;
      size_t member = 0;
      for (const auto& a : axes) {
        auto it = std::find(a.keys.begin(), a.keys.end(), k);
        if (it != a.keys.end()) {
          axis = &a;
          member = static_cast<size_t>(it - a.keys.begin());
        }
      }
      if (axis == nullptr) {
        names.fail(fmt::format("labels.{}: '{}' is not a key of 'grid:' or 'zip:'", k, k));
      }
      if (!names.is_sequence() || names.size() != axis->values.size()) {
        names.fail(fmt::format(
            "labels.{}: give one name per value: the axis has {} values", k, axis->values.size()));
      }
      std::set<std::string> unique;
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string name = names.at(i).as_string();
        if (name.empty() || !unique.insert(name).second) {
          names.at(i).fail(
              fmt::format("labels.{}: names must be non-empty and distinct, got '{}'", k, name));
        }
        value_labels[k][flow(axis->values[i][member])] = name;
      }
    }
  }
  return value_labels;
}

// One point before it is named: its values, where it was written, whether `points:` gave it.
struct Raw {
  std::vector<std::pair<std::string, YAML::Node>> values;
  ConfigNode where;
  bool explicit_point = false;  // from `points:`: named by all of its keys
};

// The cartesian product of the axes (first axis slowest), then the explicit `points:`.
std::vector<Raw> expand_points(const std::vector<Axis>& axes,
                               const ConfigNode& points,
                               const ConfigNode& root,
                               uint64_t max_points,
                               std::vector<std::string>& sweep_axes) {
  std::vector<Raw> raws;
  // A sweep is planned point by point (each resolved and validated), so its size is bounded
  // before anything is expanded: a grid of many axes multiplies out beyond any machine.
  uint64_t planned = 1;
  for (const auto& axis : axes) {
    if (__builtin_mul_overflow(planned, static_cast<uint64_t>(axis.values.size()), &planned) ||
        planned > max_points) {
      root.fail(fmt::format(
          "the grid multiplies out to more than {} points ({} axes); split it into several sweeps",
          max_points,
          axes.size()));
    }
  }
  if (!axes.empty()) {
    std::vector<size_t> idx(axes.size(), 0);
    while (true) {
      Raw raw{{}, axes.front().where};
      for (size_t a = 0; a < axes.size(); ++a) {
        for (size_t k = 0; k < axes[a].keys.size(); ++k) {
          raw.values.emplace_back(axes[a].keys[k], axes[a].values[idx[a]][k]);
        }
      }
      raws.push_back(std::move(raw));
      size_t a = axes.size();
      while (a > 0) {
        --a;
        if (++idx[a] < axes[a].values.size())
          break;
        idx[a] = 0;
        if (a == 0) {
          a = axes.size() + 1;
          break;
        }
      }
      if (a == axes.size() + 1)
        break;
    }
  }
  if (points.defined()) {
    if (!points.is_sequence())
      points.fail("'points:' is a list of maps of key: value");
    if (raws.size() + points.size() > max_points) {
      points.fail(
          fmt::format("the sweep has more than {} points ({} from the grid, {} listed); split it "
                      "into several sweeps",
                      max_points,
                      raws.size(),
                      points.size()));
    }
    for (size_t i = 0; i < points.size(); ++i) {
      ConfigNode p = points.at(i);
      if (!p.is_map())
        p.fail("a point is a map of key: value");
      Raw raw{{}, p, true};
      for (const auto& k : p.keys()) {
        raw.values.emplace_back(k, p.child(k).yaml());
        if (std::find(sweep_axes.begin(), sweep_axes.end(), k) == sweep_axes.end())
          sweep_axes.push_back(k);
      }
      raws.push_back(std::move(raw));
    }
  }

  return raws;
}

// Names a value in point names: its `labels:` name, else a short form of the value.
std::string label_of(const Sweep& s, const std::string& k, const YAML::Node& v, bool detailed) {
  auto key = s.labels.find(k);
  if (key != s.labels.end()) {
    auto it = key->second.find(flow(v));
    if (it != key->second.end())
      return it->second;
  }
  return label(v, detailed);
}

// Reads `executor:`, `slurm:` and `aggregate:`.
void read_executors(const Options& top, Sweep& s) {
  const Options ex = top.get_map("executor");
  s.workers = ex.get_int("workers");
  s.threads_per_run = ex.get_int("threads_per_run");
  s.points_per_gpu = ex.get_int("points_per_gpu");
  const Options sl = top.get_map("slurm");
  s.slurm.partition = sl.get_string("partition");
  s.slurm.time = sl.get_string("time");
  s.slurm.account = sl.get_string("account");
  s.slurm.qos = sl.get_string("qos");
  s.slurm.mem = sl.get_string("mem");
  s.slurm.cpus_per_task = sl.get_int("cpus_per_task");
  s.slurm.gpus_per_task = sl.get_int("gpus_per_task");
  s.slurm.array_limit = sl.get_int("array_limit");
  s.slurm.setup = sl.get_string("setup");
  s.slurm.extra = sl.get_string_list("extra");
  s.threshold = top.get_map("aggregate").get_float("threshold");
}

}  // namespace

Sweep load_sweep(const std::string& path,
                 const std::vector<std::string>& overrides,
                 uint64_t max_points) {
  Sweep s;
  s.file = fs::absolute(path).string();
  const ConfigNode root = load_sweep_file(path, overrides);
  const Options top = Options::validate(sweep_schema(), root, {});
  s.name = top.given("name") ? top.get_string("name") : fs::path(path).stem().string();
  const ConfigNode base = top.node("base"), extends = top.node("extends");
  if (base.defined() == extends.defined()) {
    root.fail("a sweep needs exactly one of 'base:' or 'extends:' (the experiment file it varies)");
  }
  const ConfigNode& base_node = base.defined() ? base : extends;
  fs::path bp = base_node.as_string();
  if (bp.is_relative())
    bp = fs::path(s.file).parent_path() / bp;
  if (!fs::exists(bp))
    base_node.fail(fmt::format("no such experiment file: {}", bp.string()));
  s.base = fs::weakly_canonical(bp).string();
  fs::path out = top.get_string("output_dir");
  s.dir = fs::absolute(out / sanitize(s.name)).lexically_normal().string();

  // Overrides for every point.
  std::vector<std::string> common;
  const ConfigNode set = top.node("set");
  if (set.defined()) {
    if (!set.is_map())
      set.fail("'set:' is a map of key: value applied to every point");
    for (const auto& k : set.keys())
      common.push_back(k + "=" + flow(set.child(k).yaml()));
  }
  const std::vector<Axis> axes = read_axes(top.node("grid"), top.node("zip"), s.axes);
  s.labels = read_labels(top.node("labels"), axes);
  std::vector<Raw> raws = expand_points(axes, top.node("points"), root, max_points, s.axes);
  read_executors(top, s);
  const ConfigNode paper = top.node("paper");
  if (raws.empty())
    root.fail("the sweep varies nothing: give 'grid:', 'zip:' or 'points:'");

  // Name, validate and place every point. Names use the keys that actually vary.
  // Short labels (component names only) where they tell a key's values apart.
  std::map<std::string, std::set<std::string>> distinct, short_labels;
  for (const auto& raw : raws) {
    for (const auto& [k, v] : raw.values) {
      distinct[k].insert(flow(v));
      short_labels[k].insert(label_of(s, k, v, false));
    }
  }
  std::set<std::string> names;
  std::vector<std::vector<std::string>> row_configs;  // paper row -> configurations it matches
  for (size_t i = 0; i < raws.size(); ++i) {
    Point p;
    p.index = static_cast<int64_t>(i);
    std::vector<std::string> parts, config_parts;
    for (const auto& [k, v] : raws[i].values) {
      p.varied.emplace_back(k, flow(v));
      if (k == "seed")
        continue;
      if (distinct[k].size() > 1 || raws.size() == 1 || raws[i].explicit_point) {
        const bool detailed = short_labels[k].size() < distinct[k].size();
        config_parts.push_back(short_key(k) + "=" + label_of(s, k, v, detailed));
      }
    }
    p.config_name = sanitize(config_parts.empty() ? s.name : join(config_parts, ","));
    std::vector<std::string> ov = common;
    for (const auto& [k, v] : raws[i].values)
      ov.push_back(k + "=" + flow(v));
    ov.push_back("output_dir=" + (fs::path(s.dir) / "runs").string());
    ov.push_back("name=" + p.config_name);
    Experiment e;
    try {
      e = Experiment::load(s.base, ov);
    } catch (const Error& err) {
      raws[i].where.fail(fmt::format(
          "point {} ({}) is not a valid experiment: {}", i, join(config_parts, ","), err.what()));
    }
    p.seed = static_cast<int64_t>(e.seed);
    p.name = fmt::format("{},seed={}", p.config_name, p.seed);
    if (!names.insert(p.name).second) {
      raws[i].where.fail(
          fmt::format("two points are the same experiment '{}'; vary something else or "
                      "drop one",
                      p.name));
    }
    p.overrides = ov;
    p.run_dir = e.run_dir();
    if (i == 0) {
      s.paper = sweep_paper(s, paper, e, distinct);
      row_configs.resize(s.paper.rows.size());
    }
    p.resolved = e.resolved_yaml();
    match_paper_rows(s, paper, raws[i].values, p, e, row_configs);
    s.points.push_back(std::move(p));
  }
  check_paper_rows(s, paper, row_configs);
  return s;
}

}  // namespace lengen::sweep
