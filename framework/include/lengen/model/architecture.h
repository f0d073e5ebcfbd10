#pragma once

// The architectures a model can take (`model.arch`), registered by name: which stacks each has
// and how examples are laid out for it. src/model/architecture.cpp.

#include "lengen/core/export.h"
#include "lengen/task/example.h"

#include <string>
#include <vector>

namespace lengen {

/// An architecture, registered by name: which stacks it has and how examples are laid out
/// for it (the objective follows from the layout: next-token, seq2seq or per-position).
struct LENGEN_API Architecture {
  std::string name;
  std::string summary;
  Layout layout = Layout::kSequence;
  bool encoder = false;  ///< a bidirectional encoder stack
  bool decoder = false;  ///< a causal decoder stack
  bool cross = false;    ///< decoder blocks cross-attend to the encoder's output
};

/// Registers an architecture (the three built-in ones are registered at start-up); a name
/// registered twice is an error.
LENGEN_API void register_architecture(Architecture arch);
/// Every registered architecture, by name.
LENGEN_API std::vector<Architecture> architectures();
/// The architecture `name`; fails listing the registered ones and the closest.
LENGEN_API const Architecture& architecture(const std::string& name);

}  // namespace lengen
