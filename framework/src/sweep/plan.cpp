// Planning a sweep: the sweep file -> validated points (grid x zip + points), their names and
// folders, plan.json.
#include "util.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/paper.h"
#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen::sweep {

namespace {

using json = nlohmann::json;

// Whether an axis value is the one a user wrote: the same YAML, or for a scalar, the value's
// component label (`coupling` for `[{name: coupling, max_position: 101}]`).
bool value_matches(const YAML::Node& want, const YAML::Node& have) {
  return flow(want) == flow(have) ||
         (want.IsScalar() && (want.as<std::string>() == label(have, false) ||
                              want.as<std::string>() == label(have, true)));
}

// A `labels:` name written for `key` stands for its value; anything else is returned as written.
YAML::Node resolve_label(const std::map<std::string, std::map<std::string, std::string>>& labels,
                         const std::string& key,
                         const YAML::Node& want) {
  const auto named = labels.find(key);
  if (named == labels.end() || !want.IsScalar())
    return want;
  const std::string written = want.as<std::string>();
  for (const auto& [value, name] : named->second) {
    if (name == written)
      return YAML::Load(value);
  }
  return want;
}

// The value at a dotted key (`model.shared_layers`) of a YAML tree; undefined where it has none.
YAML::Node value_at(const YAML::Node& tree, const std::string& key) {
  if (!tree.IsMap())
    return YAML::Node(YAML::NodeType::Undefined);
  const auto dot = key.find('.');
  const YAML::Node child = tree[key.substr(0, dot)];
  if (!child)
    return YAML::Node(YAML::NodeType::Undefined);
  return dot == std::string::npos ? child : value_at(child, key.substr(dot + 1));
}

// A point's value of an axis key: the value it sets, or for a point that does not set the key
// (an explicit point, or a grid point beside explicit ones), the value its resolved experiment
// has there (`model.shared_layers: false` from the base). Undefined where neither has it.
YAML::Node point_value(const std::vector<std::pair<std::string, YAML::Node>>& values,
                       const YAML::Node& resolved,
                       const std::string& key) {
  auto it =
      std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == key; });
  return it != values.end() ? it->second : value_at(resolved, key);
}

YAML::Node point_value(const Point& p, const std::string& key) {
  auto it = std::find_if(
      p.varied.begin(), p.varied.end(), [&](const auto& kv) { return kv.first == key; });
  return it != p.varied.end() ? YAML::Load(it->second) : value_at(YAML::Load(p.resolved), key);
}

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

// Two YAML trees hold the same data: scalars by their text, sequences in order, maps by their
// keys in any order. Styles (flow or block) do not count.
bool same_yaml(const YAML::Node& a, const YAML::Node& b) {
  if (a.Type() != b.Type())
    return false;
  switch (a.Type()) {
    case YAML::NodeType::Scalar:
      return a.Scalar() == b.Scalar();
    case YAML::NodeType::Sequence:
      if (a.size() != b.size())
        return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!same_yaml(a[i], b[i]))
          return false;
      }
      return true;
    case YAML::NodeType::Map:
      if (a.size() != b.size())
        return false;
      for (const auto& kv : a) {
        const YAML::Node other = b[kv.first.Scalar()];
        if (!other.IsDefined() || !same_yaml(kv.second, other))
          return false;
      }
      return true;
    default:
      return true;
  }
}

// Whether two resolved configs are the same experiment: not counting the provenance, the
// executor's thread count, or the paper's reference figures.
bool same_experiment(const std::string& a, const std::string& b) {
  auto body = [](const std::string& text) {
    YAML::Node n = YAML::Load(text);
    for (const char* k : {"provenance", "threads", "paper"})
      n.remove(k);
    return n;
  };
  return same_yaml(body(a), body(b));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Planning

Sweep load_sweep(const std::string& path,
                 const std::vector<std::string>& overrides,
                 uint64_t max_points) {
  Sweep s;
  s.file = fs::absolute(path).string();
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
  MapReader r(root);
  s.name = r.get_string("name", fs::path(path).stem().string());
  ConfigNode base = r.child("base");
  ConfigNode extends = r.child("extends");
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
  fs::path out = r.get_string("output_dir", "sweeps");
  s.dir = fs::absolute(out / sanitize(s.name)).lexically_normal().string();

  // Overrides for every point.
  std::vector<std::string> common;
  ConfigNode set = r.child("set");
  if (set.defined()) {
    if (!set.is_map())
      set.fail("'set:' is a map of key: value applied to every point");
    for (const auto& k : set.keys())
      common.push_back(k + "=" + flow(set.child(k).yaml()));
  }

  // Axes: grid keys, then zip groups.
  std::vector<Axis> axes;
  ConfigNode grid = r.child("grid");
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
  ConfigNode zip = r.child("zip");
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
      s.axes.push_back(k);
    }
  }
  // Names for the values of an axis, used in point names instead of the values themselves (a
  // list of mixture sources reads better as `mixture=primers-1pct`).
  std::map<std::string, std::map<std::string, std::string>>
      value_labels;  // key -> flow(value) -> label
  ConfigNode labels = r.child("labels");
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
  s.labels = value_labels;
  auto label_of = [&](const std::string& k, const YAML::Node& v, bool detailed) {
    auto key = value_labels.find(k);
    if (key != value_labels.end()) {
      auto it = key->second.find(flow(v));
      if (it != key->second.end())
        return it->second;
    }
    return label(v, detailed);
  };

  // Cartesian product (first axis slowest), then explicit points.
  struct Raw {
    std::vector<std::pair<std::string, YAML::Node>> values;
    ConfigNode where;
    bool explicit_point = false;  // from `points:`: named by all of its keys
  };

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
  ConfigNode points = r.child("points");
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
        if (std::find(s.axes.begin(), s.axes.end(), k) == s.axes.end())
          s.axes.push_back(k);
      }
      raws.push_back(std::move(raw));
    }
  }

  // Executors and aggregation.
  ConfigNode ex = r.child("executor");
  if (ex.defined()) {
    MapReader er(ex);
    s.workers = er.get_int("workers", s.workers);
    s.threads_per_run = er.get_int("threads_per_run", s.threads_per_run);
    s.points_per_gpu = er.get_int("points_per_gpu", s.points_per_gpu);
    er.finish();
    if (s.workers < 1)
      ex.child("workers").fail("executor.workers must be >= 1");
    if (s.points_per_gpu < 1)
      ex.child("points_per_gpu").fail("executor.points_per_gpu must be >= 1");
  }
  ConfigNode sl = r.child("slurm");
  if (sl.defined()) {
    MapReader sr(sl);
    s.slurm.partition = sr.get_string("partition", "");
    s.slurm.time = sr.get_string("time", "");
    s.slurm.account = sr.get_string("account", "");
    s.slurm.qos = sr.get_string("qos", "");
    s.slurm.mem = sr.get_string("mem", "");
    s.slurm.cpus_per_task = sr.get_int("cpus_per_task", 0);
    s.slurm.gpus_per_task = sr.get_int("gpus_per_task", 0);
    s.slurm.array_limit = sr.get_int("array_limit", 0);
    s.slurm.setup = sr.get_string("setup", "");
    ConfigNode extra = sr.child("extra");
    if (extra.defined())
      s.slurm.extra = extra.as_string_list();
    sr.finish();
  }
  const ConfigNode paper = r.child("paper");
  ConfigNode ag = r.child("aggregate");
  if (ag.defined()) {
    MapReader ar(ag);
    s.threshold = ar.get_float("threshold", s.threshold);
    ar.finish();
  }
  r.finish();
  if (raws.empty())
    root.fail("the sweep varies nothing: give 'grid:', 'zip:' or 'points:'");

  // Name, validate and place every point. Names use the keys that actually vary.
  // Short labels (component names only) where they tell a key's values apart.
  std::map<std::string, std::set<std::string>> distinct, short_labels;
  for (const auto& raw : raws) {
    for (const auto& [k, v] : raw.values) {
      distinct[k].insert(flow(v));
      short_labels[k].insert(label_of(k, v, false));
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
        config_parts.push_back(short_key(k) + "=" + label_of(k, v, detailed));
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
      // The sweep's `paper:` rows; or the base experiment's values, which describe the base's
      // configuration: beside every configuration only when the sweep varies nothing but the
      // seed, or when the sweep opts in with `paper: inherit`.
      const bool inherit = paper.is_scalar() && paper.as_string() == "inherit";
      if (paper.defined() && !inherit) {
        s.paper = PaperReference::from_config(paper, e.eval.axes(), true);
      } else {
        std::vector<std::string> varied;
        for (const auto& [k, values] : distinct) {
          if (k != "seed" && values.size() > 1)
            varied.push_back(k);
        }
        if (inherit || varied.empty()) {
          s.paper = e.paper;
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
      row_configs.resize(s.paper.rows.size());
    }
    p.resolved = e.resolved_yaml();
    const YAML::Node resolved = YAML::Load(p.resolved);
    for (size_t ri = 0; ri < s.paper.rows.size(); ++ri) {
      const ConfigNode row_node = paper.child("rows").at(ri);
      if (!paper_row_matches(
              s.paper.rows[ri], raws[i].values, resolved, s.axes, row_node, s.labels))
        continue;
      const std::string& stage = s.paper.rows[ri].stage;
      if (!stage.empty() &&
          std::none_of(e.stages.begin(), e.stages.end(), [&](const StageSpec& st) {
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
    s.points.push_back(std::move(p));
  }
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
  return s;
}

std::vector<Point> select_points(const Sweep& s, const std::vector<std::string>& only) {
  // Filters by key: values of one key are alternatives, different keys must all hold.
  std::vector<std::pair<std::string, std::vector<YAML::Node>>> filters;
  for (const auto& f : only) {
    const auto eq = f.find('=');
    LENGEN_CHECK(eq != std::string::npos && eq > 0,
                 "--only '{}': expected KEY=VALUE, e.g. --only seed=0",
                 f);
    const std::string key = f.substr(0, eq);
    LENGEN_CHECK(std::find(s.axes.begin(), s.axes.end(), key) != s.axes.end(),
                 "--only '{}': '{}' is not an axis of {} (axes: {})",
                 f,
                 key,
                 s.file,
                 join(s.axes, ", "));
    YAML::Node value;
    try {
      value = YAML::Load(f.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      throw Error(fmt::format("--only '{}': the value is not YAML: {}", f, e.msg));
    }
    value = resolve_label(s.labels, key, value);
    auto it = std::find_if(
        filters.begin(), filters.end(), [&](const auto& kv) { return kv.first == key; });
    if (it == filters.end())
      it = filters.insert(filters.end(), {key, {}});
    it->second.push_back(value);
    const bool any = std::any_of(s.points.begin(), s.points.end(), [&](const Point& p) {
      const YAML::Node have = point_value(p, key);
      return have.IsDefined() && value_matches(value, have);
    });
    if (!any) {
      std::set<std::string> values;
      for (const auto& p : s.points) {
        const YAML::Node have = point_value(p, key);
        if (have.IsDefined())
          values.insert(flow(have));
      }
      throw Error(fmt::format("--only '{}': no point of {} has that value of {} (its values: {})",
                              f,
                              s.file,
                              key,
                              join(std::vector<std::string>(values.begin(), values.end()), "; ")));
    }
  }
  std::vector<Point> kept;
  for (const auto& p : s.points) {
    const bool keep = std::all_of(filters.begin(), filters.end(), [&](const auto& filter) {
      const YAML::Node have = point_value(p, filter.first);
      if (!have.IsDefined())
        return false;
      return std::any_of(filter.second.begin(), filter.second.end(), [&](const YAML::Node& want) {
        return value_matches(want, have);
      });
    });
    if (keep)
      kept.push_back(p);
  }
  LENGEN_CHECK(!kept.empty(),
               "--only {}: no point of {} has all of these values",
               join(only, " --only "),
               s.file);
  return kept;
}

void check_plan(const Sweep& s) {
  for (const auto& p : s.points) {
    const RunDir dir(p.run_dir);
    const fs::path cfg = dir.config();
    if (!fs::exists(cfg))
      continue;
    // A point has run once it holds checkpoints, a staged run's stages, or results.
    if (!dir.ran())
      continue;
    // The config it ran under, also read by today's schemas: an option added since then shows
    // with its default, as it ran; a file today's schemas refuse is compared as written.
    auto ran_under = [&]() {
      try {
        return Experiment::load(cfg.string(), {}).resolved_yaml();
      } catch (const Error&) {
        return read_text(cfg.string());
      }
    };
    const std::string& text = p.resolved;  // load_sweep resolved every point's experiment
    if (!same_experiment(read_text(cfg.string()), text) && !same_experiment(ran_under(), text)) {
      throw Error(
          fmt::format("{}: point '{}' already ran with a different config ({}); move its run "
                      "directory away or restore the sweep file",
                      s.file,
                      p.name,
                      cfg.string()));
    }
  }
}

void write_plan(const Sweep& s) {
  check_plan(s);  // every point before any file is written
  fs::create_directories(s.dir);
  json points = json::array();
  for (const auto& p : s.points) {
    fs::create_directories(p.run_dir);
    const fs::path cfg = RunDir(p.run_dir).config();
    const std::string& text = p.resolved;
    write_file_atomic(cfg.string(), text);
    json varied = json::object();
    for (const auto& [k, v] : p.varied)
      varied[k] = v;
    points.push_back({{"index", p.index},
                      {"name", p.name},
                      {"config", p.config_name},
                      {"seed", p.seed},
                      {"varied", varied},
                      {"run_dir", fs::relative(p.run_dir, s.dir).string()}});
  }
  json manifest{{"name", s.name},
                {"file", s.file},
                {"base", s.base},
                {"axes", s.axes},
                {"threshold", s.threshold},
                {"points", points}};
  if (!s.paper.empty())
    manifest["paper"] = s.paper.to_json();
  write_file_atomic((fs::path(s.dir) / "sweep.json").string(), manifest.dump(2) + "\n");
}

}  // namespace lengen::sweep
