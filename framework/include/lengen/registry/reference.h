#pragma once

// Component references (`model.norm`, `model.activation`, `model.arch`,
// `train.schedule.decay`): read and validated once per reference, then built from what was read.

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/export.h"
#include "lengen/registry/registry.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace lengen {

/// A reference read: the component's name and its validated options.
struct Reference {
  std::string name;
  Options options;
  std::string library;  ///< the library that registered the name when it was read
};

/// The reference `node` (a name, or a map with `name:` and options) checked against
/// `registry`: the name is registered (its plugin loaded by convention if need be) and the
/// options are valid; fails through `node`, naming the file, line and key. Remembered by kind
/// and reference text (the text Options::get_string gives), so that a reference is read and
/// validated once per process: when the file is read (OptionSpec::component's check), not
/// again when the component is built.
LENGEN_API const Reference& read_reference(const RegistryBase& registry, const ConfigNode& node);

/// The same from the text Options::get_string gave (`where` names it in messages, e.g.
/// "model.norm"): no parse when the text has been read before.
LENGEN_API const Reference& read_reference(const RegistryBase& registry,
                                           const std::string& text,
                                           const std::string& where);

/// Builds the component a reference text names, from its remembered options.
template <class Base, class Context>
std::shared_ptr<Base> create_referenced(const Registry<Base, Context>& registry,
                                        const std::string& text,
                                        const std::string& where,
                                        const Context& ctx) {
  const Reference& r = read_reference(registry, text, where);
  return registry.find(r.name)->make(r.options, ctx);
}

/// The component a reference text names, built once per text and library and shared: for
/// kinds whose components hold no state (architectures, activations, decays).
template <class Base, class Context>
std::shared_ptr<const Base> shared_referenced(const Registry<Base, Context>& registry,
                                              const std::string& text,
                                              const std::string& where) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Base>> built;
  const Reference& r = read_reference(registry, text, where);
  const std::string key = r.library + "\n" + text;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = built.find(key); it != built.end())
    return it->second;
  std::shared_ptr<const Base> made = registry.find(r.name)->make(r.options, Context{});
  built.emplace(key, made);
  return made;
}

}  // namespace lengen
