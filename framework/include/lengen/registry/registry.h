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

/// What every registry knows of a component whatever its type: its schema and library.
struct ComponentEntry {
  ComponentSpec spec;
  PluginOrigin origin;
};

/// The part of a registry that does not depend on the component's type, so that the loader
/// and `lengen plugins` treat every kind alike. Each registry enters itself in
/// all_registries() when it is built and leaves when destroyed.
class LENGEN_API RegistryBase {
 public:
  /// kind: "norm" (also the plugin file's liblengen-<kind>-<name>.so); title: "norms"; where:
  /// the YAML key that names one, "model.norm".
  RegistryBase(std::string kind, std::string title, std::string where);
  RegistryBase(const RegistryBase&) = delete;
  RegistryBase& operator=(const RegistryBase&) = delete;
  virtual ~RegistryBase();

  const std::string& kind() const { return kind_; }

  const std::string& title() const { return title_; }

  const std::string& where() const { return where_; }

  /// Every entry, sorted by name.
  virtual std::vector<const ComponentEntry*> entries() const = 0;
  virtual const ComponentEntry* entry(const std::string& name) const = 0;
  /// Removes everything a library registered (rollback of a failed registration).
  virtual void remove_library(const std::string& library) = 0;
  /// Checks a reference to one of its components (a name, or a map with `name:` and options;
  /// OptionSpec::component): the name is registered, loading its plugin by convention, and
  /// the options are valid. Fails through `node`, naming the file, line and key.
  virtual void check_reference(const ConfigNode& node) const = 0;

 private:
  std::string kind_, title_, where_;
};

/// The registries built so far, in the order they were built. Call a registry's accessor
/// (norm_registry(), ...) to make sure it is among them.
LENGEN_API std::vector<RegistryBase*> all_registries();

/// A registry of one kind of component ("position", "task"): name -> schema + factory.
/// Components are created from their own YAML subtree: a map with `name:` plus options, or
/// a bare string naming a component without required options.
template <class Base, class Context>
class Registry final : public RegistryBase {
 public:
  using Factory = std::function<std::shared_ptr<Base>(const Options&, const Context&)>;

  struct Entry : ComponentEntry {
    Entry(ComponentSpec s, PluginOrigin o, Factory f)
        : ComponentEntry{std::move(s), std::move(o)}, make(std::move(f)) {}

    Factory make;
  };

  explicit Registry(std::string kind, std::string title = "", std::string where = "")
      : RegistryBase(kind, title.empty() ? kind : title, std::move(where)) {}

  /// Adds a component. A name registered twice is an error naming both libraries.
  void add(ComponentSpec spec, PluginOrigin origin, Factory make) {
    if (auto it = entries_.find(spec.name); it != entries_.end()) {
      LENGEN_FAIL("{} '{}' is registered twice: by {} and by {}; remove one of the libraries",
                  kind(),
                  spec.name,
                  it->second.origin.library,
                  origin.library);
    }
    spec.kind = kind();
    std::string name = spec.name;
    entries_.emplace(name, Entry{std::move(spec), std::move(origin), std::move(make)});
  }

  void remove_library(const std::string& library) override {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.origin.library == library ? entries_.erase(it) : std::next(it);
    }
  }

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }

  const ComponentEntry* entry(const std::string& name) const override { return find(name); }

  std::vector<const ComponentEntry*> entries() const override {
    std::vector<const ComponentEntry*> out;
    for (const auto& [name, e] : entries_)
      out.push_back(&e);
    return out;
  }

  /// The entry for `name`, loading liblengen-<kind>-<name>.so by convention if needed;
  /// fails listing the known names and the closest match. `where` is a ConfigNode for the
  /// error location.
  const Entry& lookup(const std::string& name, const ConfigNode& where) const {
    if (const Entry* e = find(name)) {
      return *e;
    }
    if (resolve_by_convention(kind(), name)) {
      if (const Entry* e = find(name)) {
        return *e;
      }
    }
    resolve_all();  // plugins load lazily: list every installed one, not only those loaded
    std::vector<std::string> known = names();
    where.fail(
        fmt::format("unknown {} '{}'{}; known: {} (plugins are searched in the YAML "
                    "'plugins:' list, --plugin-path, LENGEN_PLUGIN_PATH and the "
                    "installed plugin folder)",
                    kind(),
                    name,
                    did_you_mean(name, known),
                    known.empty() ? "none" : join(known)));
  }

  /// Builds the component `name` from the options in `node` (a map, whose `name:` key if any
  /// is skipped, or undefined for every default): for a section that names the component
  /// apart from its options or has a default name.
  std::shared_ptr<Base> create_named(const std::string& name,
                                     const ConfigNode& node,
                                     const Context& ctx,
                                     const ConfigNode& where) const {
    const Entry& entry = lookup(name, where);
    return entry.make(Options::validate(entry.spec, node), ctx);
  }

  /// Validates `node` against the component's schema and builds it.
  std::shared_ptr<Base> create(const ConfigNode& node, const Context& ctx) const {
    std::string name;
    if (node.is_scalar()) {
      name = node.as_string();
    } else if (node.is_map()) {
      ConfigNode n = node.child("name");
      if (!n.defined()) {
        node.fail(fmt::format("a {} needs a 'name:' key", kind()));
      }
      name = n.as_string();
    } else {
      node.fail(fmt::format("expected a {} name or a map with 'name:', got {}",
                            kind(),
                            node.defined() ? "a list" : "nothing"));
    }
    const Entry& entry = lookup(name, node);
    Options opts = Options::validate(entry.spec, node);
    return entry.make(opts, ctx);
  }

  void check_reference(const ConfigNode& node) const override { (void)options_of(node); }

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

 private:
  std::map<std::string, Entry> entries_;
};

/// The origin recorded for what liblengen registers itself.
inline PluginOrigin builtin_origin() {
  return PluginOrigin{"<builtin>", "lengen", "builtin"};
}

/// Adds a built-in component class to `registry`: T has `static ComponentSpec spec()` and a
/// constructor `T(const Options&, const Context&)`.
template <class T, class Base, class Context>
void add_builtin(Registry<Base, Context>& registry) {
  registry.add(T::spec(),
               builtin_origin(),
               [](const Options& o, const Context& ctx) -> std::shared_ptr<Base> {
                 return std::make_shared<T>(o, ctx);
               });
}

// Each kind declares its registry in its own header: position_registry() in
// lengen/position/scheme.h, task_registry() in lengen/task/task.h, norm_registry() in
// lengen/model/norm.h, activation_registry() in lengen/model/activation.h,
// architecture_registry() in lengen/model/architecture.h, optimizer_registry() in
// lengen/train/optimizer.h, decay_registry() in lengen/train/schedule.h, stage_registry() in
// lengen/experiment/stage_spec.h, each with a `registry_of(const Base*)` the Registrar finds
// it by (argument-dependent lookup, in the plugin's own translation unit).

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
    // add_position_scheme (lengen/position/scheme.h, which a scheme includes) adds `cyclic`.
    add_position_scheme(Scheme::spec(), origin_, [](const Options& o, const auto& c) {
      return std::make_shared<Scheme>(o, c);
    });
  }

  /// Registers a task class with `static ComponentSpec spec()` and a constructor
  /// `T(const Options&, const TaskContext&)`.
  template <class T>
  void add_task() {
    add_to<T>(registry_of(static_cast<const T*>(nullptr)));
  }

  /// Registers a stage kind with `static ComponentSpec spec()` and a constructor
  /// `S(const Options&, const StageInfo&)` (include lengen/stage/stage.h).
  template <class S>
  void add_stage() {
    add_to<S>(registry_of(static_cast<const S*>(nullptr)));
  }

  /// Registers an optimizer with `static ComponentSpec spec()` and a constructor
  /// `O(const Options&, const OptimizerContext&)` (include lengen/train/optimizer.h); its
  /// options gain `lr`.
  template <class O>
  void add_optimizer() {
    // add_optimizer_entry (lengen/train/optimizer.h) puts `lr` first in its options.
    add_optimizer_entry(O::spec(), origin_, [](const Options& o, const auto& c) {
      return std::make_shared<O>(o, c);
    });
  }

  /// Registers a learning-rate decay (include lengen/train/schedule.h), a norm
  /// (lengen/model/norm.h) or an activation (lengen/model/activation.h): a class with
  /// `static ComponentSpec spec()` and a constructor `(const Options&, const Context&)`.
  template <class D>
  void add_decay() {
    add_to<D>(registry_of(static_cast<const D*>(nullptr)));
  }

  template <class N>
  void add_norm() {
    add_to<N>(registry_of(static_cast<const N*>(nullptr)));
  }

  template <class A>
  void add_activation() {
    add_to<A>(registry_of(static_cast<const A*>(nullptr)));
  }

  /// Registers an architecture (include lengen/model/architecture.h): a class deriving from
  /// Architecture with `static ComponentSpec spec()` and a constructor
  /// `(const Options&, const ArchitectureContext&)`.
  template <class A>
  void add_architecture() {
    add_to<A>(registry_of(static_cast<const A*>(nullptr)));
  }

  const PluginOrigin& origin() const { return origin_; }

 private:
  template <class T, class Base, class Context>
  void add_to(Registry<Base, Context>& registry) {
    registry.add(
        T::spec(), origin_, [](const Options& o, const Context& c) -> std::shared_ptr<Base> {
          return std::make_shared<T>(o, c);
        });
  }

  PluginOrigin origin_;
};

}  // namespace lengen
