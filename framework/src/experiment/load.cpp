// Reading an experiment file: `extends:` chains merged into one tree, then Experiment::load.
#include "util.h"

#include "lengen/core/error.h"
#include "lengen/experiment/experiment.h"

#include <algorithm>
#include <filesystem>
#include <functional>

namespace fs = std::filesystem;

namespace lengen {

namespace {

// `base` less every key that `own` sets to null (`paper: ~` drops the base's paper block;
// `train: {eval_every: ~}` one key of a section), at any depth of maps.
// With `self` (base == own) the null keys themselves are dropped.
ConfigNode without_nulled(const YAML::Node& base,
                          const YAML::Node& own,
                          const ConfigNode& like,
                          bool self = false) {
  std::function<YAML::Node(const YAML::Node&, const YAML::Node&)> strip = [&](const YAML::Node& b,
                                                                              const YAML::Node& o) {
    if (!b.IsMap() || !o.IsMap())
      return b;
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : b) {
      const YAML::Node mine = o[kv.first.as<std::string>()];
      if (mine.IsDefined() && mine.IsNull())
        continue;
      // force_insert keeps the nodes themselves: errors still name the base's file and line.
      out.force_insert(
          kv.first,
          mine.IsDefined() && (self || mine.IsMap()) ? strip(kv.second, mine) : kv.second);
    }
    return out;
  };
  return ConfigNode(strip(base, own), like.source(), like.path());
}

// An experiment file with `extends: BASE` is BASE with this file's keys on top: maps merge
// key by key, anything else (lists, scalars) replaces; a `task:` naming another task and a
// `paper:` block replace the base's whole; a key set to null removes the base's; `name` is
// never inherited (a file without one is named by its stem). Bases may extend further; a
// cycle is an error. Each base's nodes keep their file, so errors name the file that wrote
// the key.
ConfigNode load_extending(const std::string& path, std::vector<std::string>& chain) {
  ConfigNode root = load_config_file(path);
  const ConfigNode ext = root.child("extends");
  if (!ext.defined()) {
    return root;
  }
  fs::path base_path = ext.as_string();
  if (base_path.is_relative()) {
    base_path = fs::path(path).parent_path() / base_path;
  }
  if (!fs::exists(base_path)) {
    ext.fail(fmt::format("no such experiment file: {}", base_path.string()));
  }
  const std::string canonical = fs::weakly_canonical(base_path).string();
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    chain.push_back(canonical);
    ext.fail(fmt::format("'extends:' makes a cycle: {}", fmt::join(chain, " -> ")));
  }
  chain.push_back(canonical);
  const ConfigNode base = load_extending(base_path.string(), chain);
  const ConfigNode own = without_keys(root, {"extends"});
  std::vector<std::string> replace{"paper"};
  const ConfigNode own_task = own.child("task"), base_task = base.child("task");
  const bool own_names_task = own_task.is_scalar() || own_task.child("name").defined();
  if (own_names_task && base_task.defined() && task_name_of(own_task) != task_name_of(base_task)) {
    replace.push_back("task");
  }
  const ConfigNode merged =
      merge_config(without_nulled(without_keys(base, {"name"}).yaml(), own.yaml(), base),
                   without_nulled(own.yaml(), own.yaml(), own, true),
                   replace);
  auto source = std::make_shared<ConfigSource>(*root.source());
  source->bases = base.source()->bases;
  source->bases.emplace_back(base.source()->file, base.yaml());
  return ConfigNode(merged.yaml(), source, "");
}

}  // namespace

ConfigNode load_experiment_file(const std::string& path) {
  std::vector<std::string> chain{fs::weakly_canonical(path).string()};
  return load_extending(path, chain);
}

Experiment Experiment::load(const std::string& path, const std::vector<std::string>& overrides) {
  return from_node(apply_overrides(load_experiment_file(path), overrides), path);
}

}  // namespace lengen
