#pragma once
// Helpers shared by the files of src/experiment/ (not installed).
#include "lengen/config/node.h"

#include <string>

namespace lengen {

/// `task:`'s name: a bare name or the map's `name`.
std::string task_name_of(const ConfigNode& n);

}  // namespace lengen
