// A planned sweep's points selected (--only), checked against what already ran, and written
// (sweep.json, each point's config.yaml). Reading the file into points: load.cpp.
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
