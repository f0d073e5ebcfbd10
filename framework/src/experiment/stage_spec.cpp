// A stage kind as an experiment sees it: the interface's out-of-line parts, the framework's
// keys of a stage entry, and the registered expansions of compact entries.
#include "lengen/experiment/stage_spec.h"

#include <map>

namespace lengen {

Stage::~Stage() = default;

StageRegistry& stage_registry() {
  static StageRegistry r("stage", "stage kinds", "stages[i].kind");
  return r;
}

ComponentSpec StageSpec::schema() {
  using O = OptionSpec;
  return {
      "section",
      "stages[i]",
      "one stage; besides these keys, `position:` (a list, replacing the file's) and the kind's "
      "own options",
      {O::string("name", "the stage's folder RUN/stages/<name>/ (required)").may_be_absent(),
       O::string("kind", "a stage kind: train, eval, or a plugin's")
           .with_default(std::string("train")),
       O::string("init_from",
                 "an earlier stage's name or a run directory; default: none for train, the "
                 "previous stage for other kinds")
           .may_be_absent(),
       O::string("new_parameters",
                 "a model parameter the checkpoint lacks: error, or init (keep it fresh)")
           .with_default(std::string("error"))
           .one_of({"error", "init"}),
       O::string("dropped_parameters", "a checkpoint parameter the model lacks: error, or ignore")
           .with_default(std::string("error"))
           .one_of({"error", "ignore"}),
       O::boolean("init_optimizer", "take Adam's state and step count from init_from's checkpoint")
           .with_default(false),
       O::integer("seed",
                  "the stage's seed (initialisation, data order, queries); default: the file's")
           .may_be_absent(),
       O::map("task", "overrides of task: for this stage (another name: replaces it)").any_keys(),
       O::map("model", "overrides of model: (keys that keep parameter shapes)").any_keys(),
       O::map("train", "overrides of train:").any_keys(),
       O::map("eval", "overrides of eval:").any_keys()}};
}

namespace {

std::map<std::string, StageExpansion>& expansions() {
  static std::map<std::string, StageExpansion> m;
  return m;
}

}  // namespace

void register_stage_expansion(const std::string& kind, StageExpansion expand) {
  expansions()[kind] = std::move(expand);
}

const StageExpansion* find_stage_expansion(const std::string& kind) {
  auto it = expansions().find(kind);
  return it == expansions().end() ? nullptr : &it->second;
}

}  // namespace lengen
