#pragma once

#include "lengen/core/error.h"
#include "lengen/core/export.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lengen {

/// Where a config tree came from: the file, and which key paths were set by `--set`.
/// Shared by every ConfigNode of one tree so that any node can say where it was written.
struct ConfigSource {
  std::string file;                              ///< path of the YAML file, or "<string>"
  std::map<std::string, std::string> overrides;  ///< key path -> "--set a.b=c" text
  /// Files this tree extends (`extends:`), the most basic first, each with its tree: a node
  /// that came from one of them is reported with that file's name.
  std::vector<std::pair<std::string, YAML::Node>> bases;
};

/// A YAML node that knows its key path ("model.position[1].max_position") and its source,
/// so that every error can name file, line, column and key. Conversions fail with a message
/// that says what was expected and what was found.
class LENGEN_API ConfigNode {
 public:
  ConfigNode() = default;
  ConfigNode(YAML::Node node, std::shared_ptr<const ConfigSource> source, std::string path);
  ConfigNode(const ConfigNode&) = default;
  /// Rebinds (YAML::Node's own operator= writes through to the referenced node instead).
  ConfigNode& operator=(const ConfigNode& other);

  const YAML::Node& yaml() const { return node_; }

  const std::string& path() const { return path_; }

  std::shared_ptr<const ConfigSource> source() const { return source_; }

  bool defined() const { return node_.IsDefined() && !node_.IsNull(); }

  bool is_map() const { return node_.IsMap(); }

  bool is_sequence() const { return node_.IsSequence(); }

  bool is_scalar() const { return node_.IsScalar(); }

  /// "file.yaml:12:5, key model.layers" or "--set model.layers=x, key model.layers".
  std::string where() const;

  /// Throws lengen::Error: "<where>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

  /// Child of a map (undefined node when absent). `key` is appended to the path.
  ConfigNode child(const std::string& key) const;
  /// The key itself (for errors about the key rather than its value).
  ConfigNode key_node(const std::string& key) const;
  /// Element of a sequence.
  ConfigNode at(size_t index) const;

  size_t size() const { return node_.size(); }

  /// Keys of a map, in file order.
  std::vector<std::string> keys() const;

  /// Typed conversions with clear errors ("expected an integer, got 'abc'").
  int64_t as_int() const;
  double as_float() const;
  bool as_bool() const;
  std::string as_string() const;
  std::vector<int64_t> as_int_list() const;
  std::vector<double> as_float_list() const;
  std::vector<std::string> as_string_list() const;

 private:
  YAML::Node node_;
  std::shared_ptr<const ConfigSource> source_;
  std::string path_;
};

/// Reads a map node field by field and rejects keys nobody asked for, with a "did you mean"
/// hint. Typical use: read every field, then call finish().
class LENGEN_API MapReader {
 public:
  /// Fails unless `node` is a map (an undefined node reads as an empty map).
  explicit MapReader(ConfigNode node);

  /// The child node; marks the key as known. Undefined when absent.
  ConfigNode child(const std::string& key);
  /// The child, failing with "missing required key" when absent.
  ConfigNode required(const std::string& key);
  bool has(const std::string& key) const;

  int64_t get_int(const std::string& key, int64_t fallback);
  double get_float(const std::string& key, double fallback);
  bool get_bool(const std::string& key, bool fallback);
  std::string get_string(const std::string& key, const std::string& fallback);
  /// A string that must be one of `choices`.
  std::string get_choice(const std::string& key,
                         const std::string& fallback,
                         const std::vector<std::string>& choices);

  /// Marks keys as known without reading them (consumed by someone else).
  void ignore(const std::string& key);
  /// Fails on the first key that was never read, suggesting the closest known key.
  void finish() const;

  const ConfigNode& node() const { return node_; }

 private:
  ConfigNode node_;
  std::vector<std::string> known_;
};

/// Loads a YAML file into a ConfigNode; errors name the file and the parser's line.
LENGEN_API ConfigNode load_config_file(const std::string& path);

/// Parses YAML text (tests, --set values); `name` stands in for the file name in messages.
LENGEN_API ConfigNode load_config_string(const std::string& text, const std::string& name);

/// Applies `--set key.path=value` overrides to a loaded tree. The key path uses dots for
/// maps and [i] or .i for sequence elements; value is parsed as YAML (`3`, `true`, `[1, 4]`).
/// Setting a key that does not exist in the file is allowed (validation catches unknown
/// keys later and names the --set text).
LENGEN_API ConfigNode apply_overrides(const ConfigNode& root,
                                      const std::vector<std::string>& assignments);

/// `over` laid over `base`: maps merge key by key (recursively), anything else in `over`
/// replaces. The result shares the nodes (and so the file/line marks) of both trees; the
/// source is `base`'s. `replace_keys` are replaced whole even when both are maps.
LENGEN_API ConfigNode merge_config(const ConfigNode& base,
                                   const ConfigNode& over,
                                   const std::vector<std::string>& replace_keys = {});

/// A map node without `keys` (shares the remaining children's nodes and marks).
LENGEN_API ConfigNode without_keys(const ConfigNode& node, const std::vector<std::string>& keys);

/// Serialises a node back to YAML text (the resolved config in a run directory).
LENGEN_API std::string to_yaml(const YAML::Node& node);

}  // namespace lengen
