#pragma once

// A trained run opened for use outside training: its resolved experiment and its model with the
// final weights (or a stage's), on a device. What `lengen decode`, `logits`, `eval`, `attention`
// and the Python package (`lengen.load_run`) start from.

#include "lengen/core/export.h"
#include "lengen/experiment/experiment.h"
#include "lengen/model/transformer.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace lengen {

struct LENGEN_API OpenRun {
  Experiment whole;  ///< the run's experiment as its config.yaml gives it, every stage
  Experiment exp;    ///< the experiment of the stage whose model this is (the final one by default)
  Transformer model{nullptr};  ///< in eval mode, its weights loaded from `checkpoint`
  torch::Device device{torch::kCPU};
  std::string dir;         ///< the run directory
  std::string stage;       ///< the stage opened ("" for the final model)
  std::string checkpoint;  ///< the file the weights came from
};

/// A run directory's config.yaml, or the experiment file itself (anything not a folder).
LENGEN_API std::string config_of(const std::string& run_or_file);

/// Opens the run at `run` (a run directory, or an experiment file whose run directory is then
/// output_dir/name/seed) with `sets` applied to its config.yaml. `stage`: a stage of a staged
/// run ("": the final model); a stage that wrote no weights (an evaluation, a labelling round)
/// gives the model it evaluated, followed through init_from. `device`: "cpu", "cuda", ... ("":
/// the experiment's). An override of the task's range moves a stored grid that covered the
/// whole old range (`--set task.eval_digits=[1,40]`). Errors name the run and what is missing.
LENGEN_API OpenRun open_run(const std::string& run,
                            const std::vector<std::string>& sets = {},
                            const std::string& stage = "",
                            const std::string& device = "");

}  // namespace lengen
