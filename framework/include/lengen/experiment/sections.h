#pragma once

// The schemas of every framework-owned part of an experiment file, for `lengen plugins
// --markdown` (docs/config-reference.md): the top level, model, train, eval, a stage entry and
// paper. Each is the schema that validates it.

#include "lengen/config/schema.h"
#include "lengen/core/export.h"

#include <vector>

namespace lengen {

LENGEN_API std::vector<ComponentSpec> framework_sections();

}  // namespace lengen
