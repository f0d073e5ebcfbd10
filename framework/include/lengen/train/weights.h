#pragma once

// Model weights by name: what checkpoints store and what `init_from` loads.

#include "lengen/core/export.h"
#include "lengen/model/transformer.h"
#include "lengen/train/checkpoint.h"

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// Loads only the model weights from a checkpoint file (strict: every parameter must be
/// present with the right shape).
LENGEN_API void load_weights(Transformer& model, const std::string& path);
/// The same from a file already read; `path` names it in errors.
LENGEN_API void load_weights(Transformer& model, const TensorFile& file, const std::string& path);

/// How `init_from` maps a checkpoint onto a (possibly different) model, by parameter name.
struct InitRules {
  bool init_new = false;  ///< new_parameters: init keeps the model's fresh initialisation
  bool drop_unused =
      false;  ///< dropped_parameters: ignore skips checkpoint tensors the model lacks
};

/// Loads weights by name under `rules`: shapes must agree; a model parameter the checkpoint
/// lacks is an error unless rules.init_new, a checkpoint parameter the model lacks is an
/// error unless rules.drop_unused. Every problem is listed, with both shapes. Returns the
/// names that kept their fresh initialisation.
LENGEN_API std::vector<std::string> load_weights_by_name(Transformer& model,
                                                         const std::string& path,
                                                         const InitRules& rules);

/// Model parameters by their documented names (see TransformerImpl).
LENGEN_API std::vector<std::pair<std::string, torch::Tensor>> named_weights(Transformer& model);

}  // namespace lengen
