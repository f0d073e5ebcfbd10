// The `task:` section's helpers shared by the experiment's files: its name, and the training
// sources of `task.mixture` (declared in util.h).
#include "util.h"

#include "lengen/config/section.h"
#include "lengen/core/error.h"
#include "lengen/registry/registry.h"

namespace lengen {

// `task:`'s name: a bare name or the map's `name` (declared in util.h).
std::string task_name_of(const ConfigNode& n) {
  return n.is_scalar() ? n.as_string() : n.child("name").as_string();
}

namespace {

// `task:` as a map (a bare name becomes {name: ...}).
ConfigNode task_map(const ConfigNode& n) {
  if (!n.is_scalar())
    return n;
  YAML::Node m(YAML::NodeType::Map);
  m["name"] = n.yaml();
  return ConfigNode(m, n.source(), n.path());
}

}  // namespace

// The training sources of `task.mixture` (declared in util.h): each entry is the experiment's task
// options with the entry's own laid over them (a different `name:` starts from that task's
// defaults).
std::vector<DataSource> parse_mixture(const ConfigNode& task_node,
                                      const ConfigNode& mixture,
                                      const std::shared_ptr<Task>& base_task) {
  const Task& base = *base_task;
  std::vector<DataSource> out;
  if (!mixture.is_sequence()) {
    mixture.fail(
        "task.mixture must be a list of sources: [{source: name, weight: 0.99, dataset_size: N, "
        "<task options>}, ...]");
  }
  const ConfigNode base_opts = without_keys(task_map(task_node), {"mixture"});
  std::vector<std::string> seen;
  for (size_t i = 0; i < mixture.size(); ++i) {
    ConfigNode entry = mixture.at(i);
    if (!entry.is_map())
      entry.fail("a mixture source is a map of task options plus source, weight, dataset_size");
    DataSource src;
    src.name = entry.child("source").defined() ? entry.child("source").as_string()
                                               : fmt::format("source{}", i);
    if (std::find(seen.begin(), seen.end(), src.name) != seen.end()) {
      entry.child("source").fail(fmt::format("two mixture sources are named '{}'", src.name));
    }
    seen.push_back(src.name);
    if (entry.child("weight").defined()) {
      src.weight = entry.child("weight").as_float();
      if (!(src.weight > 0))
        entry.child("weight").fail("a source's weight must be > 0");
    }
    if (entry.child("dataset_size").defined()) {
      src.dataset_size = entry.child("dataset_size").as_int();
      if (src.dataset_size < 0)
        entry.child("dataset_size").fail("dataset_size must be >= 0 (0 = online)");
    }
    if (entry.child("from_stage").defined()) {
      // Self_label stages' examples: the task itself (for their IDs), no options of its own.
      const ConfigNode from = entry.child("from_stage");
      if (from.is_sequence()) {
        for (size_t k = 0; k < from.size(); ++k)
          src.from_stages.push_back(from.at(k).as_string());
      } else {
        src.from_stages.push_back(from.as_string());
      }
      if (src.from_stages.empty())
        from.fail("from_stage: name a self_label stage, or list several");
      for (const auto& key : entry.keys()) {
        if (key != "source" && key != "weight" && key != "from_stage") {
          entry.child(key).fail(
              fmt::format("a from_stage source is the labels of stage '{}' as they are; it takes "
                          "source and weight, not '{}'",
                          join(src.from_stages),
                          key));
        }
      }
      src.task = base_task;
      out.push_back(std::move(src));
      continue;
    }
    ConfigNode opts = without_keys(entry, {"source", "weight", "dataset_size"});
    const bool other_task =
        opts.child("name").defined() && opts.child("name").as_string() != task_name_of(base_opts);
    ConfigNode merged = other_task ? opts : merge_config(base_opts, opts);
    auto t = task_registry().create(merged, TaskContext{});
    if (t->vocabulary().tokens() != base.vocabulary().tokens() ||
        t->position_levels() != base.position_levels()) {
      entry.fail(fmt::format(
          "mixture source '{}' has a different vocabulary or number of position-ID levels "
          "than the experiment's task; sources must share them",
          src.name));
    }
    src.task = std::move(t);
    out.push_back(std::move(src));
  }
  const size_t weighted = static_cast<size_t>(
      std::count_if(out.begin(), out.end(), [](const DataSource& d) { return d.weight > 0; }));
  if (weighted != 0 && weighted != out.size()) {
    mixture.fail(
        "give every mixture source a weight, or none (then every source needs a dataset_size and "
        "the "
        "training set is their union)");
  }
  if (weighted == 0) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].dataset_size == 0 && out[i].from_stages.empty()) {
        mixture.at(i).fail(fmt::format(
            "source '{}' has no weight and no dataset_size: an unweighted mixture is the "
            "union of fixed sets",
            out[i].name));
      }
    }
  }
  return out;
}

}  // namespace lengen
