#pragma once

// Framework config sections (model, train, eval, stage entries) declared with the same option
// schema as plugins: one ComponentSpec (kind "section") validates and documents the section,
// and a table of bindings from (possibly nested, "optimizer.lr") keys to struct members both
// reads the YAML into the struct and writes the struct back (the run's config.yaml). Keys
// that are not plain members (shorthands, open maps) are read and written by their owner.
//
//   static const Section<TrainConfig>& section() {
//     static const Section<TrainConfig> s = Section<TrainConfig>(TrainConfig::schema())
//         .bind("steps", &TrainConfig::steps)
//         .bind("optimizer.lr", &TrainConfig::lr);
//     return s;
//   }

#include "lengen/config/schema.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace lengen {

template <class T>
class Section {
 public:
  explicit Section(ComponentSpec spec) : spec_(std::move(spec)) {}

  /// Binds the key at `path` (dots for nested maps) to a member of T.
  template <class M>
  Section&& bind(const std::string& path, M T::*member) && {
    Binding b;
    b.path = split(path);
    b.get = [member, key = b.path.back()](T& out, const Options& o) {
      if constexpr (std::is_same_v<M, bool>) {
        out.*member = o.get_bool(key);
      } else if constexpr (std::is_integral_v<M>) {
        out.*member = static_cast<M>(o.get_int(key));
      } else if constexpr (std::is_floating_point_v<M>) {
        out.*member = static_cast<M>(o.get_float(key));
      } else if constexpr (std::is_same_v<M, std::string>) {
        out.*member = o.get_string(key);
      } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
        out.*member = o.get_string_list(key);
      } else {
        static_assert(std::is_same_v<M, std::vector<int64_t>>, "bind: unsupported member type");
        out.*member = o.get_int_list(key);
      }
    };
    b.put = [member](const T& in) { return YAML::Node(in.*member); };
    bindings_.push_back(std::move(b));
    return std::move(*this);
  }

  /// Binds the key at `path` to the owner's own reading and writing: `get` reads it from the
  /// validated options of the map that holds it (only when it is written there), `put`
  /// writes it (e.g. a registered component's resolved options).
  Section&& bind_with(const std::string& path, std::function<void(T&, const Options&)> get,
                      std::function<YAML::Node(const T&)> put) && {
    Binding b;
    b.path = split(path);
    b.get = std::move(get);
    b.put = std::move(put);
    bindings_.push_back(std::move(b));
    return std::move(*this);
  }

  /// Validates `node` against the schema and reads every bound key into `out`. Returns the
  /// validated options for the keys the owner reads itself.
  Options read(const ConfigNode& node, T& out) const {
    Options top = Options::validate(spec_, node, {});
    for (const auto& b : bindings_) {
      Options o = top;
      for (size_t i = 0; i + 1 < b.path.size(); ++i) o = o.get_map(b.path[i]);
      if (o.given(b.path.back()) || o.node(b.path.back()).defined()) b.get(out, o);
    }
    return top;
  }

  /// The bound members of `value` as YAML, nested paths as nested maps, in binding order.
  YAML::Node write(const T& value) const {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& b : bindings_) {
      YAML::Node at = out;
      for (size_t i = 0; i + 1 < b.path.size(); ++i) {
        if (!at[b.path[i]]) at[b.path[i]] = YAML::Node(YAML::NodeType::Map);
        at.reset(at[b.path[i]]);
      }
      at[b.path.back()] = b.put(value);
    }
    return out;
  }

  const ComponentSpec& spec() const { return spec_; }

 private:
  static std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> out;
    for (size_t start = 0;;) {
      const size_t dot = path.find('.', start);
      out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) return out;
      start = dot + 1;
    }
  }

  struct Binding {
    std::vector<std::string> path;
    std::function<void(T&, const Options&)> get;
    std::function<YAML::Node(const T&)> put;
  };
  ComponentSpec spec_;
  std::vector<Binding> bindings_;
};

/// The framework's sections, for `lengen plugins --markdown` (docs/config-reference.md):
/// model, train, eval and the framework keys of a stage entry.
LENGEN_API std::vector<ComponentSpec> framework_sections();

}  // namespace lengen
