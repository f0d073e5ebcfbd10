#pragma once

// Framework config sections (model, train, eval) declared with the same option schema as
// plugins, each key once: its option (name, type, doc, range) and the struct member it reads
// into are one call, and the member's default is the key's default. The section validates
// and documents the YAML (one ComponentSpec of kind "section"), reads it into the struct and
// writes the struct back (the run's config.yaml). Keys that are not plain members (shorthands,
// open maps) are declared with option() and read by their owner.
//
//   static const Section<TrainConfig>& section() {
//     using O = OptionSpec;
//     static const Section<TrainConfig> s = Section<TrainConfig>("train", "optimisation")
//         .field(&TrainConfig::steps, O::integer("steps", "optimisation steps").at_least(1))
//         .option(O::map("schedule", "the learning-rate schedule"))
//         .field("schedule", &TrainConfig::decay, O::string("decay", "a registered decay"));
//     return s;
//   }

#include "lengen/config/schema.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace lengen {

template <class T>
class Section {
 public:
  /// An empty section: its YAML key and a one-line summary.
  Section(std::string name, std::string summary)
      : spec_{"section", std::move(name), std::move(summary), {}} {}

  /// Declares a key and the member it reads into. Unless `spec` has a default or may be
  /// absent, the member's default (T{}.*member) is the key's default.
  template <class M>
  Section&& field(M T::*member, OptionSpec spec) && {
    with_member_default(spec, member);
    bindings_.push_back(binding({spec.key}, member));
    spec_.options.push_back(std::move(spec));
    return std::move(*this);
  }

  /// The same for a key of the map option `map`, declared before (e.g. "schedule").
  template <class M>
  Section&& field(const std::string& map, M T::*member, OptionSpec spec) && {
    with_member_default(spec, member);
    bindings_.push_back(binding({map, spec.key}, member));
    map_option(map).fields.push_back(std::move(spec));
    return std::move(*this);
  }

  /// Declares a key the owner reads itself from the validated options (Section::read's result).
  Section&& option(OptionSpec spec) && {
    spec_.options.push_back(std::move(spec));
    return std::move(*this);
  }

  /// The same for a key of the map option `map`, declared before.
  Section&& option(const std::string& map, OptionSpec spec) && {
    map_option(map).fields.push_back(std::move(spec));
    return std::move(*this);
  }

  /// Declares a key with the owner's own reading and writing: `get` reads it from the
  /// validated options of the section (only when it is written there), `put` writes it
  /// (e.g. a registered component's resolved options).
  Section&& option(OptionSpec spec,
                   std::function<void(T&, const Options&)> get,
                   std::function<YAML::Node(const T&)> put) && {
    bindings_.push_back(Binding{{spec.key}, std::move(get), std::move(put)});
    spec_.options.push_back(std::move(spec));
    return std::move(*this);
  }

  /// Validates `node` against the schema and reads every bound key into `out`. Returns the
  /// validated options for the keys the owner reads itself.
  Options read(const ConfigNode& node, T& out) const {
    Options top = Options::validate(spec_, node, {});
    for (const auto& b : bindings_) {
      Options o = top;
      for (size_t i = 0; i + 1 < b.path.size(); ++i)
        o = o.get_map(b.path[i]);
      if (o.given(b.path.back()) || o.node(b.path.back()).defined())
        b.get(out, o);
    }
    return top;
  }

  /// The bound members of `value` as YAML, nested paths as nested maps, in declaration order.
  YAML::Node write(const T& value) const {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& b : bindings_) {
      YAML::Node at = out;
      for (size_t i = 0; i + 1 < b.path.size(); ++i) {
        if (!at[b.path[i]])
          at[b.path[i]] = YAML::Node(YAML::NodeType::Map);
        at.reset(at[b.path[i]]);
      }
      at[b.path.back()] = b.put(value);
    }
    return out;
  }

  /// The section's schema (validation, `lengen plugins`, docs/config-reference.md).
  const ComponentSpec& spec() const { return spec_; }

 private:
  struct Binding {
    std::vector<std::string> path;
    std::function<void(T&, const Options&)> get;
    std::function<YAML::Node(const T&)> put;
  };

  template <class M>
  static void with_member_default(OptionSpec& spec, M T::*member) {
    if (!spec.default_value && !spec.optional)
      spec.with_default(T{}.*member);
  }

  template <class M>
  static Binding binding(std::vector<std::string> path, M T::*member) {
    Binding b;
    b.path = std::move(path);
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
        static_assert(std::is_same_v<M, std::vector<int64_t>>,
                      "Section::field: unsupported member type");
        out.*member = o.get_int_list(key);
      }
    };
    b.put = [member](const T& in) { return YAML::Node(in.*member); };
    return b;
  }

  OptionSpec& map_option(const std::string& key) {
    for (auto& o : spec_.options) {
      if (o.key == key && o.type == OptionType::kMap)
        return o;
    }
    throw std::logic_error("Section::field: no map option '" + key +
                           "' declared before its fields");
  }

  ComponentSpec spec_;
  std::vector<Binding> bindings_;
};

}  // namespace lengen
