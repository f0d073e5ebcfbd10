// An experiment's `stages:`: each entry validated against its kind's schema, and the resolved
// experiment each stage trains or evaluates.
#include "util.h"

#include "lengen/core/error.h"
#include "lengen/experiment/experiment.h"
#include "lengen/experiment/stage_spec.h"

namespace lengen {

namespace {

const std::vector<std::string> kStageSections = {"task", "model", "position", "train", "eval"};

}  // namespace

namespace {

// Compact entries (`kind: self_improve`) stand for several stages: the entries with them
// expanded. `seed` is the file's.
std::vector<ConfigNode> expand_stage_entries(const ConfigNode& stages,
                                             const ConfigNode& root,
                                             uint64_t seed) {
  std::vector<ConfigNode> entries;
  for (size_t i = 0; i < stages.size(); ++i) {
    ConfigNode entry = stages.at(i);
    const ConfigNode kind = entry.is_map() ? entry.child("kind") : ConfigNode();
    const StageExpansion* expand =
        kind.defined() ? find_stage_expansion(kind.as_string()) : nullptr;
    if (expand == nullptr) {
      entries.push_back(entry);
      continue;
    }
    const auto& reg = stage_registry().lookup(kind.as_string(), kind);
    ComponentSpec combined = reg.spec;
    combined.name = fmt::format("stages[{}]", i);
    for (const auto& opt : StageSpec::schema().options) {
      if (opt.key == "name" || opt.key == "kind" || opt.key == "init_from" || opt.key == "seed") {
        combined.options.push_back(opt);
      }
    }
    const Options opts =
        Options::validate(combined, entry, {"task", "model", "position", "train", "eval"});
    StageExpansionContext context;
    if (!entries.empty() && entries.back().child("name").defined()) {
      context.previous = entries.back().child("name").as_string();
    }
    context.seed = opts.given("seed") ? static_cast<uint64_t>(opts.get_int("seed")) : seed;
    size_t k = 0;
    for (const YAML::Node& y : (*expand)(opts, entry, context)) {
      entries.emplace_back(
          y, root.source(), fmt::format("stages[{}] ({} stage {})", i, kind.as_string(), ++k));
    }
  }
  return entries;
}

// The stage's name: a folder name, not taken by an earlier stage.
std::string stage_name(const ConfigNode& entry, const std::vector<StageSpec>& earlier) {
  if (!entry.child("name").defined())
    entry.fail("a stage needs a name: (its folder is RUN/stages/<name>)");
  const std::string name = entry.child("name").as_string();
  if (name.empty() || name.find_first_of("/\\ ") != std::string::npos || name == "." ||
      name == "..") {
    entry.child("name").fail(
        fmt::format("'{}' cannot name a folder; use letters, digits, - and _", name));
  }
  for (const auto& prev : earlier) {
    if (prev.name == name)
      entry.child("name").fail(fmt::format("two stages are named '{}'", name));
  }
  return name;
}

// init_from: an earlier stage by name, or a run directory. Stages that do not train read the
// previous stage's model unless told otherwise. `i` is the entry's index in `entries`.
void resolve_init_from(StageSpec& st,
                       const ConfigNode& entry,
                       size_t i,
                       const std::vector<ConfigNode>& entries,
                       const std::vector<StageSpec>& earlier) {
  ConfigNode init = entry.child("init_from");
  if (init.defined()) {
    st.init_from = init.as_string();
  } else if (!st.trains && i > 0) {
    st.init_from = earlier.back().name;
  }
  for (const auto& prev : earlier) {
    if (prev.name == st.init_from)
      st.init_from_stage = true;
  }
  if (init.defined() && !st.init_from_stage) {
    for (size_t j = i; j < entries.size(); ++j) {
      ConfigNode later = entries[j].child("name");
      if (later.defined() && later.as_string() == st.init_from) {
        init.fail(fmt::format(
            "stage '{}' starts from '{}', which runs {}; init_from names an earlier stage "
            "or a run directory",
            st.name,
            st.init_from,
            j == i ? "as itself" : "after it"));
      }
    }
  }
}

}  // namespace

void Experiment::parse_stages(const ConfigNode& stages) {
  if (!stages.is_sequence() || stages.size() == 0) {
    stages.fail("stages: must be a non-empty list of {name, kind, ...} entries");
  }
  const ConfigNode base = without_keys(root, {"stages"});
  const std::vector<ConfigNode> entries = expand_stage_entries(stages, root, seed);
  for (size_t i = 0; i < entries.size(); ++i) {
    ConfigNode entry = entries[i];
    if (!entry.is_map())
      entry.fail("a stage is a map with at least name: and kind:");
    StageSpec st;
    st.node = entry;
    st.name = stage_name(entry, this->stages);
    ConfigNode kind = entry.child("kind");
    st.kind = kind.defined() ? kind.as_string() : "train";
    const auto& reg = stage_registry().lookup(st.kind, kind.defined() ? kind : entry);
    // Every key at once: the framework's and the kind's (an unknown key lists both).
    ComponentSpec combined = StageSpec::schema();
    combined.name = fmt::format("stages[{}]", i);
    for (const auto& opt : reg.spec.options)
      combined.options.push_back(opt);
    const Options all = Options::validate(combined, entry, {"position"});
    st.options = all.only(reg.spec);
    // Built once, now: the kind's own checks run before anything does, and the framework learns
    // what it needs to know of it; the same object runs.
    st.stage = reg.make(st.options, StageInfo{st.name});
    st.trains = st.stage->trains();
    st.evaluates = st.stage->evaluates();
    st.reads_evaluations = st.stage->reads_evaluations();
    resolve_init_from(st, entry, i, entries, this->stages);
    st.init.init_new = all.get_string("new_parameters") == "init";
    st.init.drop_unused = all.get_string("dropped_parameters") == "ignore";
    st.init_optimizer = all.get_bool("init_optimizer");
    if (st.init_from.empty() && (st.init_optimizer || entry.child("new_parameters").defined())) {
      entry.fail(fmt::format("stage '{}' sets init rules but has no init_from", st.name));
    }
    // The stage's experiment: the file's sections with the stage's laid over them.
    YAML::Node over(YAML::NodeType::Map);
    for (const auto& sec : kStageSections) {
      if (entry.child(sec).defined())
        over[sec] = entry.child(sec).yaml();
    }
    if (entry.child("seed").defined())
      over["seed"] = entry.child("seed").yaml();
    // A stage that does not train (eval, calibrate) reads init_from's model as that stage built
    // it: its model and position sections, unless the entry gives its own.
    if (!st.trains && st.init_from_stage) {
      for (const auto& prev : this->stages) {
        if (prev.name != st.init_from)
          continue;
        for (const char* sec : {"model", "position"}) {
          if (!entry.child(sec).defined())
            over[sec] = prev.experiment->root.child(sec).yaml();
        }
      }
    }
    ConfigNode over_node(over, root.source(), "");
    std::vector<std::string> replace = {"position"};
    const ConfigNode st_task = entry.child("task");
    if (st_task.defined() &&
        (st_task.is_scalar() || (st_task.child("name").defined() &&
                                 st_task.child("name").as_string() != task_name_of(task_node)))) {
      replace.push_back("task");  // another task: none of the file's task options apply
    }
    ConfigNode merged = merge_config(base, over_node, replace);
    st.experiment =
        std::make_shared<const Experiment>(from_node(merged, file, /*allow_stages=*/false));
    this->stages.push_back(std::move(st));
  }
}

}  // namespace lengen
