#pragma once

#include "lengen/config/node.h"
#include "lengen/core/export.h"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lengen {

/// The value types an option can have; `lengen plugins --describe` prints them.
enum class OptionType {
  kInt,
  kFloat,
  kBool,
  kString,
  kIntList,
  kFloatList,
  kMap,
  kMapList,
  kStringList,
  kComponent,
  kAny
};

LENGEN_API const char* option_type_name(OptionType type);

class ConfigNode;

/// Checks one component reference (OptionSpec::component) against the registry of `kind`:
/// the name is registered (a plugin loaded by convention first) and the options are the
/// component's. Installed by the registry layer; fails through `node`.
using ReferenceCheck = void (*)(const std::string& kind, const ConfigNode& node);
LENGEN_API void set_reference_check(ReferenceCheck check);

/// One option of a component: what `lengen plugins` prints and what YAML is validated
/// against. Built fluently:
///   OptionSpec::integer("max_position", "largest ID per level").with_default(64).at_least(1)
struct LENGEN_API OptionSpec {
  std::string key;  ///< snake_case YAML key
  OptionType type = OptionType::kString;
  std::string doc;                          ///< one line
  std::optional<YAML::Node> default_value;  ///< absent => required
  std::optional<double> min, max;           ///< inclusive range for numbers / list elements
  std::vector<std::string> choices;         ///< allowed values for strings
  std::vector<OptionSpec> fields;           ///< kMap / kMapList: the nested schema
  bool open = false;      ///< kMap: keys not declared here (the owner checks them)
  bool optional = false;  ///< may be absent with no default (Options::given says)
  std::string shorthand;  ///< kMap: a scalar x means {shorthand: x}
  std::string reference;  ///< kComponent: the kind of component it names ("norm")
  std::string shape;      ///< kAny: what the value is, for listings ("a list of schemes")

  static OptionSpec integer(std::string key, std::string doc);
  static OptionSpec number(std::string key, std::string doc);
  static OptionSpec boolean(std::string key, std::string doc);
  static OptionSpec string(std::string key, std::string doc);
  static OptionSpec int_list(std::string key, std::string doc);
  static OptionSpec float_list(std::string key, std::string doc);
  /// A list of strings (a scalar stands for a one-element list); `one_of` checks each.
  static OptionSpec string_list(std::string key, std::string doc);
  /// A nested map validated against `fields` (absent: every field's default).
  static OptionSpec map(std::string key, std::string doc, std::vector<OptionSpec> fields = {});
  /// A list of maps, each validated against `fields` (absent: an empty list).
  static OptionSpec map_list(std::string key, std::string doc, std::vector<OptionSpec> fields);
  /// A reference to a registered component of `kind` ("norm", "activation", "architecture",
  /// "decay"): its name, or a map `{name: NAME, option: value, ...}` with its options. The
  /// name and options are checked against the kind's registry when the file is read (plugins
  /// on the search path included: see set_reference_check). Options::get_string gives the
  /// name, or the whole reference as one-line YAML when it has options; the core builds the
  /// component from the reading remembered under that text (registry/reference.h), so a
  /// reference is read and validated once.
  static OptionSpec component(std::string key, std::string doc, std::string kind);
  /// A key whose value its owner reads and checks itself (a list of position schemes, the
  /// task with its mixture, stage entries): declared so that it is a known key and
  /// documented, `shape` saying what it holds.
  static OptionSpec any(std::string key, std::string doc, std::string shape);

  template <class T>
  OptionSpec& with_default(const T& value) {
    default_value = YAML::Node(value);
    return *this;
  }

  OptionSpec& at_least(double v) {
    min = v;
    return *this;
  }

  OptionSpec& at_most(double v) {
    max = v;
    return *this;
  }

  OptionSpec& one_of(std::vector<std::string> values) {
    choices = std::move(values);
    return *this;
  }

  /// kMap: any keys (e.g. `eval.grid`, whose axes are the task's); the owner validates them.
  OptionSpec& any_keys() {
    open = true;
    return *this;
  }

  OptionSpec& may_be_absent() {
    optional = true;
    return *this;
  }

  /// kMap: `optimizer: adam` reads as `optimizer: {name: adam}`.
  OptionSpec& scalar_means(std::string field) {
    shorthand = std::move(field);
    return *this;
  }

  /// "int, default 64, >= 1" for listings.
  std::string describe_type() const;
};

/// Everything the framework knows about a component before building it.
struct LENGEN_API ComponentSpec {
  std::string kind;     ///< "position" | "task" | "stage" | "section" (model, train, eval, ...)
  std::string name;     ///< YAML selector, e.g. "coupling"
  std::string summary;  ///< one line; what `lengen plugins` prints
  std::vector<OptionSpec> options;
};

/// A component's validated options: every key of the schema is present (given or default),
/// typed and in range. Accessors fail only on programming errors (asking for an undeclared
/// key); `fail(key, msg)` reports a semantic problem with the file/line of that key.
class LENGEN_API Options {
 public:
  Options() = default;

  /// Validates `node` (a map) against `spec`: unknown keys (with a did-you-mean hint), missing
  /// required keys, wrong types, out-of-range values, invalid choices. `skip` lists keys of
  /// the node that belong to the caller (e.g. "name").
  static Options validate(const ComponentSpec& spec,
                          const ConfigNode& node,
                          const std::vector<std::string>& skip = {"name"});

  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  std::vector<int64_t> get_int_list(const std::string& key) const;
  std::vector<double> get_float_list(const std::string& key) const;
  std::vector<std::string> get_string_list(const std::string& key) const;
  /// An inclusive range written `[lo, hi]` (or one value for lo = hi); anything else, or
  /// lo > hi, fails naming the key.
  std::pair<int64_t, int64_t> get_int_range(const std::string& key) const;
  /// A kMap option, validated against its fields.
  Options get_map(const std::string& key) const;
  /// The options `spec` declares, taken from these (validated against a spec that includes
  /// them): what Options::validate(spec, ...) gives, without validating the entry again.
  Options only(const ComponentSpec& spec) const;
  /// A kMapList option: one Options per element.
  std::vector<Options> get_map_list(const std::string& key) const;

  /// The option's node (an open map's, for its owner to read); undefined when absent.
  const ConfigNode& node(const std::string& key) const { return node_of(key); }

  /// True when the key was written in the YAML (not taken from the default).
  bool given(const std::string& key) const;

  /// Throws lengen::Error naming the key's file and line (or the component, for defaults).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  /// The resolved options as YAML (defaults filled in), for the run's config.yaml.
  YAML::Node to_yaml() const;

  const std::string& component() const { return component_; }

 private:
  const ConfigNode& node_of(const std::string& key) const;

  std::string component_;  ///< "position 'coupling'" for messages
  std::vector<std::pair<std::string, ConfigNode>> values_;
  std::vector<std::string> given_;
  std::vector<OptionSpec> specs_;  ///< the schema, for nested maps
};

}  // namespace lengen
