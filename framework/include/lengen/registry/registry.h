#pragma once

#include "lengen/config/node.h"
#include "lengen/config/schema.h"
#include "lengen/core/error.h"
#include "lengen/core/export.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lengen {

class PositionScheme;
struct SchemeContext;
class Task;
struct TaskContext;
class Stage;
struct StageInfo;

/// Which library a component came from; recorded in every run's config.yaml.
struct PluginOrigin {
  std::string library;  ///< absolute path of the .so, or "<builtin>"
  std::string plugin;   ///< plugin name from its descriptor
  std::string version;  ///< plugin version from its descriptor
};

/// Hook the registries call when a name is unknown: tries to load
/// liblengen-<kind>-<name>.so from the plugin search path (resolution by convention).
/// Returns true if something was loaded. Implemented by the plugin loader.
LENGEN_API bool resolve_by_convention(const std::string& kind, const std::string& name);

/// Hook the registries call before reporting an unknown name: loads every plugin on the
/// search path (errors ignored; they are reported when a broken library is asked for by
/// name), so the message lists what is installed. Implemented by the plugin loader.
LENGEN_API void resolve_all();

/// A registry of one kind of component ("position", "task"): name -> schema + factory.
/// Components are created from their own YAML subtree: a map with `name:` plus options, or
/// a bare string naming a component without required options.
template <class Base, class Context>
class Registry {
 public:
  using Factory = std::function<std::shared_ptr<Base>(const Options&, const Context&)>;

  struct Entry {
    ComponentSpec spec;
    PluginOrigin origin;
    Factory make;
  };

  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  /// Adds a component. A name registered twice is an error naming both libraries.
  void add(ComponentSpec spec, PluginOrigin origin, Factory make) {
    if (auto it = entries_.find(spec.name); it != entries_.end()) {
      LENGEN_FAIL("{} '{}' is registered twice: by {} and by {}; remove one of the libraries",
                  kind_, spec.name, it->second.origin.library, origin.library);
    }
    spec.kind = kind_;
    std::string name = spec.name;
    entries_.emplace(name, Entry{std::move(spec), std::move(origin), std::move(make)});
  }

  /// Removes everything a library registered (rollback of a failed registration).
  void remove_library(const std::string& library) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.origin.library == library ? entries_.erase(it) : std::next(it);
    }
  }

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// The entry for `name`, loading liblengen-<kind>-<name>.so by convention if needed;
  /// fails listing the known names and the closest match. `where` is a ConfigNode for the
  /// error location.
  const Entry& lookup(const std::string& name, const ConfigNode& where) const {
    if (const Entry* e = find(name)) {
      return *e;
    }
    if (resolve_by_convention(kind_, name)) {
      if (const Entry* e = find(name)) {
        return *e;
      }
    }
    resolve_all();  // plugins load lazily: list every installed one, not only those loaded
    std::vector<std::string> known = names();
    where.fail(fmt::format("unknown {} '{}'{}; known: {} (plugins are searched in the YAML "
                           "'plugins:' list, --plugin-path, LENGEN_PLUGIN_PATH and the "
                           "installed plugin folder)",
                           kind_, name, did_you_mean(name, known),
                           known.empty() ? "none" : join(known)));
  }

  /// Validates `node` against the component's schema and builds it.
  std::shared_ptr<Base> create(const ConfigNode& node, const Context& ctx) const {
    std::string name;
    if (node.is_scalar()) {
      name = node.as_string();
    } else if (node.is_map()) {
      ConfigNode n = node.child("name");
      if (!n.defined()) {
        node.fail(fmt::format("a {} needs a 'name:' key", kind_));
      }
      name = n.as_string();
    } else {
      node.fail(fmt::format("expected a {} name or a map with 'name:', got {}", kind_,
                            node.defined() ? "a list" : "nothing"));
    }
    const Entry& entry = lookup(name, node);
    Options opts = Options::validate(entry.spec, node);
    return entry.make(opts, ctx);
  }

  /// Validated options of `node` without building (for config dumps).
  Options options_of(const ConfigNode& node) const {
    std::string name = node.is_scalar() ? node.as_string() : node.child("name").as_string();
    const Entry& entry = lookup(name, node);
    return Options::validate(entry.spec, node);
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) {
      out.push_back(name);
    }
    return out;
  }

  /// Every entry, sorted by name.
  std::vector<const Entry*> list() const {
    std::vector<const Entry*> out;
    for (const auto& [name, e] : entries_) {
      out.push_back(&e);
    }
    return out;
  }

  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

/// The origin recorded for what liblengen registers itself.
inline PluginOrigin builtin_origin() { return PluginOrigin{"<builtin>", "lengen", "builtin"}; }

/// Adds a built-in component class to `registry`: T has `static ComponentSpec spec()` and a
/// constructor `T(const Options&, const Context&)`.
template <class T, class Base, class Context>
void add_builtin(Registry<Base, Context>& registry) {
  registry.add(T::spec(), builtin_origin(),
               [](const Options& o, const Context& ctx) -> std::shared_ptr<Base> { return std::make_shared<T>(o, ctx); });
}

using PositionRegistry = Registry<PositionScheme, SchemeContext>;
using TaskRegistry = Registry<Task, TaskContext>;
using StageRegistry = Registry<Stage, StageInfo>;

/// The process-wide registries (owned by liblengen).
LENGEN_API PositionRegistry& position_registry();
LENGEN_API TaskRegistry& task_registry();
/// Stage kinds (`stages[i].kind`); see lengen/stage/stage.h.
LENGEN_API StageRegistry& stage_registry();

/// Adds a position scheme to position_registry() with the options the framework gives every
/// scheme (`cyclic`) appended to its spec and applied to what `make` builds.
LENGEN_API void add_position_scheme(ComponentSpec spec, PluginOrigin origin, PositionRegistry::Factory make);

/// Handed to a plugin's register function; bound to the library being loaded so every
/// component it adds records its origin.
class LENGEN_API Registrar {
 public:
  explicit Registrar(PluginOrigin origin) : origin_(std::move(origin)) {}
  virtual ~Registrar();

  /// Registers a position scheme class with `static ComponentSpec spec()` and a constructor
  /// `Scheme(const Options&, const SchemeContext&)`.
  template <class Scheme>
  void add_position() {
    add_position_scheme(Scheme::spec(), origin_, [](const Options& o, const SchemeContext& c) {
      return std::make_shared<Scheme>(o, c);
    });
  }

  /// Registers a task class with `static ComponentSpec spec()` and a constructor
  /// `T(const Options&, const TaskContext&)`.
  template <class T>
  void add_task() {
    task_registry().add(T::spec(), origin_, [](const Options& o, const TaskContext& c) {
      return std::make_shared<T>(o, c);
    });
  }

  /// Registers a stage kind with `static ComponentSpec spec()` and a constructor
  /// `S(const Options&, const StageInfo&)` (include lengen/stage/stage.h).
  template <class S>
  void add_stage() {
    stage_registry().add(S::spec(), origin_, [](const Options& o, const StageInfo& c) {
      return std::make_shared<S>(o, c);
    });
  }

  const PluginOrigin& origin() const { return origin_; }

 private:
  PluginOrigin origin_;
};

}  // namespace lengen
