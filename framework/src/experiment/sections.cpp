// The top level of an experiment file as a schema, and the list of every framework section
// `lengen plugins --markdown` documents.
#include "lengen/experiment/sections.h"

#include "lengen/eval/config.h"
#include "lengen/eval/paper.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/config.h"
#include "lengen/train/config.h"

namespace lengen {

ComponentSpec Experiment::schema() {
  using O = OptionSpec;
  return {
      "section",
      "experiment",
      "the top level of an experiment file; `model`, `train`, `eval`, `stages[i]` and `paper` "
      "have their own tables below, the task and the position schemes theirs under Tasks and "
      "Position schemes",
      {O::string("name",
                 "run name: results go to <output_dir>/<name>/<seed>/; default: the file's stem")
           .may_be_absent(),
       O::string("extends",
                 "an experiment file this one builds on (relative to this file): its keys, with "
                 "this file's on top (read when the file loads; see the notes above)")
           .may_be_absent(),
       O::integer("seed", "seeds data order, initialisation, dropout and random offsets")
           .with_default(0)
           .at_least(0),
       O::string("device", "auto picks CUDA when LibTorch sees a GPU")
           .with_default(std::string("auto"))
           .one_of({"cpu", "cuda", "auto"}),
       O::string("dtype", "bfloat16 = autocast on CUDA (weights stay float32)")
           .with_default(std::string("float32"))
           .one_of({"float32", "float64", "bfloat16"}),
       O::string("output_dir", "root of run directories").with_default(std::string("runs")),
       O::integer("threads",
                  "LibTorch intra-op threads; 0 = OMP_NUM_THREADS where it is set to a positive "
                  "count, else the cores the process may run on (its CPU affinity: taskset, a "
                  "Slurm cpuset)")
           .with_default(0)
           .at_least(0),
       O::string_list("plugins", "plugin libraries to load first (relative to the YAML file)")
           .may_be_absent(),
       O::any("task",
              "the task and its options (under Tasks); `mixture:` lists training sources",
              "registered task: {name: NAME, options..., mixture: [...]}"),
       O::map("model", "the architecture (the `model` table)").any_keys(),
       O::any("position",
              "position schemes, each NAME or {name: NAME, options...}; several compose",
              "list of registered position schemes (or one)"),
       O::map("train", "optimisation (the `train` table)").any_keys(),
       O::map("eval", "the length-generalization grid (the `eval` table)").any_keys(),
       O::any("stages",
              "a multi-stage experiment: stages run in order in one run directory (the "
              "`stages[i]` table, stages.md)",
              "list of stage entries")
           .may_be_absent(),
       O::map("paper", "the paper's figures beside the run's (the `paper` table)").any_keys(),
       O::map("provenance",
              "written by lengen into a run's config.yaml (commit, machine); read as "
              "information only")
           .any_keys()}};
}

std::vector<ComponentSpec> framework_sections() {
  return {Experiment::schema(),
          ModelConfig::schema(),
          TrainConfig::schema(),
          EvalConfig::schema(),
          StageSpec::schema(),
          PaperReference::schema(false)};
}

}  // namespace lengen
