#pragma once
// Helpers shared by the files of src/experiment/ (not installed).
#include "lengen/config/node.h"
#include "lengen/experiment/experiment.h"

#include <memory>
#include <string>
#include <vector>

namespace lengen {

/// `task:`'s name: a bare name or the map's `name`.
std::string task_name_of(const ConfigNode& n);

/// The training sources of `task.mixture` (src/experiment/mixture.cpp): each entry is the
/// experiment's task options (`task_node`, built as `base_task`) with the entry's own laid
/// over them; a different `name:` starts from that task's defaults.
std::vector<DataSource> parse_mixture(const ConfigNode& task_node,
                                      const ConfigNode& mixture,
                                      const std::shared_ptr<Task>& base_task);

}  // namespace lengen
