// The keys of a sweep file as a schema: what load_sweep validates a file against and what
// docs/config-reference.md documents.
#include "lengen/eval/paper.h"
#include "lengen/sweep/sweep.h"

namespace lengen::sweep {

ComponentSpec sweep_schema() {
  using O = OptionSpec;
  return {
      "section",
      "sweep",
      "the top level of a sweep file (`lengen sweep`, sweeps.md): the experiment it varies, "
      "the axes and how the points run",
      {O::string("name", "the sweep's folder <output_dir>/<name>; default: the file's stem")
           .may_be_absent(),
       O::string("base", "the experiment file it varies (relative to this file); or `extends:`")
           .may_be_absent(),
       O::string("extends", "the same as `base:` (give one of the two)").may_be_absent(),
       O::string("output_dir", "root of sweep folders").with_default(std::string("sweeps")),
       O::any("set",
              "overrides applied to every point, experiment keys in the --set spelling",
              "map of key: value")
           .may_be_absent(),
       O::any("grid",
              "axes crossed with each other (cartesian product, first key slowest)",
              "map of key: [values]")
           .may_be_absent(),
       O::any("zip",
              "groups whose members vary together, each a map of key: [values] of one length",
              "list of maps")
           .may_be_absent(),
       O::any("labels",
              "names for an axis's values in point names, one per value in order",
              "map of key: [names]")
           .may_be_absent(),
       O::any("points",
              "extra points, each its own overrides (not crossed with the grid)",
              "list of maps of key: value")
           .may_be_absent(),
       O::map("executor",
              "the local executor",
              {O::integer("workers", "points run at a time").with_default(1).at_least(1),
               O::integer("threads_per_run", "LibTorch threads of each point; 0: cores / workers")
                   .with_default(0)
                   .at_least(0),
               O::integer("points_per_gpu", "with GPUs: points sharing one GPU at a time")
                   .with_default(1)
                   .at_least(1)}),
       O::map("slurm",
              "the Slurm executor (`--executor slurm`); every key optional",
              {O::string("partition", "#SBATCH --partition").with_default(std::string("")),
               O::string("time", "#SBATCH --time, e.g. \"02:00:00\"").with_default(std::string("")),
               O::string("account", "#SBATCH --account").with_default(std::string("")),
               O::string("qos", "#SBATCH --qos").with_default(std::string("")),
               O::string("mem", "#SBATCH --mem, e.g. 16G").with_default(std::string("")),
               O::integer("cpus_per_task", "#SBATCH --cpus-per-task; 0: Slurm's default")
                   .with_default(0)
                   .at_least(0),
               O::integer("gpus_per_task", "#SBATCH --gpus-per-task; 0: none")
                   .with_default(0)
                   .at_least(0),
               O::integer("array_limit", "array tasks at once (%N); 0: no limit")
                   .with_default(0)
                   .at_least(0),
               O::string_list("extra", "lines added to the batch script verbatim")
                   .with_default(std::vector<std::string>{}),
               O::string("setup", "shell lines run before each point (module load ...)")
                   .with_default(std::string(""))}),
       O::any("paper",
              "the paper's figures beside the configurations (the `sweep paper` table), or "
              "`inherit`: the base experiment's beside every configuration",
              "map, or inherit")
           .may_be_absent(),
       O::map("aggregate",
              "`lengen aggregate`",
              {O::number("threshold", "a seed counts as a success at or above this accuracy")
                   .with_default(0.9)
                   .at_least(0)
                   .at_most(1)})}};
}

std::vector<ComponentSpec> sweep_sections() {
  return {sweep_schema(), PaperReference::schema(true)};
}

}  // namespace lengen::sweep
