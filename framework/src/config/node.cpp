// ConfigNode (a YAML node that knows its file, line and key path) and MapReader (reads a map
// field by field, rejecting keys nobody asked for).
#include "lengen/config/node.h"

#include "lengen/core/parse.h"

#include <algorithm>
#include <cmath>

namespace lengen {

ConfigNode::ConfigNode(YAML::Node node,
                       std::shared_ptr<const ConfigSource> source,
                       std::string path)
    : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}

namespace {

// Whether `node` is `tree` or lies inside it (node identity, not equal values).
bool contains_node(const YAML::Node& tree, const YAML::Node& node) {
  if (tree.is(node))
    return true;
  if (tree.IsMap()) {
    for (const auto& kv : tree) {
      if (kv.first.is(node) || contains_node(kv.second, node))
        return true;
    }
  } else if (tree.IsSequence()) {
    for (const auto& v : tree) {
      if (contains_node(v, node))
        return true;
    }
  }
  return false;
}

}  // namespace

std::string ConfigNode::where() const {
  std::string file = source_ ? source_->file : "<config>";
  if (source_ && node_.IsDefined()) {
    for (const auto& [base_file, tree] : source_->bases) {
      if (contains_node(tree, node_)) {
        file = base_file;
        break;
      }
    }
  }
  if (source_) {
    // A key set (or inside a subtree set) on the command line is reported as such.
    for (const auto& [key, text] : source_->overrides) {
      if (path_ == key || path_.rfind(key + ".", 0) == 0 || path_.rfind(key + "[", 0) == 0) {
        return fmt::format("{}, key '{}'", text, path_);
      }
    }
  }
  std::string key = path_.empty() ? "" : fmt::format(", key '{}'", path_);
  YAML::Mark m = node_.IsDefined() ? node_.Mark() : YAML::Mark::null_mark();
  if (m.line >= 0) {
    return fmt::format("{}:{}:{}{}", file, m.line + 1, m.column + 1, key);
  }
  return file + key;
}

ConfigNode& ConfigNode::operator=(const ConfigNode& other) {
  if (this != &other) {
    this->~ConfigNode();
    new (this) ConfigNode(other);
  }
  return *this;
}

void ConfigNode::fail(const std::string& message) const {
  throw Error(fmt::format("{}: {}", where(), message));
}

ConfigNode ConfigNode::child(const std::string& key) const {
  std::string p = path_.empty() ? key : path_ + "." + key;
  if (!node_.IsMap()) {
    return ConfigNode(YAML::Node(YAML::NodeType::Undefined), source_, p);
  }
  // Iterate rather than index: indexing a missing key yields an invalid ("zombie") node and a
  // non-const index would insert the key into the tree.
  for (const auto& kv : node_) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) {
      return ConfigNode(kv.second, source_, p);
    }
  }
  return ConfigNode(YAML::Node(YAML::NodeType::Undefined), source_, p);
}

ConfigNode ConfigNode::key_node(const std::string& key) const {
  std::string p = path_.empty() ? key : path_ + "." + key;
  for (const auto& kv : node_) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) {
      return ConfigNode(kv.first, source_, p);
    }
  }
  return ConfigNode(YAML::Node(YAML::NodeType::Undefined), source_, p);
}

ConfigNode ConfigNode::at(size_t index) const {
  std::string p = fmt::format("{}[{}]", path_, index);
  if (!node_.IsSequence() || index >= node_.size()) {
    return ConfigNode(YAML::Node(YAML::NodeType::Undefined), source_, p);
  }
  const YAML::Node n = node_;
  return ConfigNode(n[index], source_, p);
}

std::vector<std::string> ConfigNode::keys() const {
  std::vector<std::string> out;
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      // A key written as a list or a map (`{[a, b]: 1}`, `? {x: 1}`) names nothing.
      if (!kv.first.IsScalar()) {
        fail(fmt::format("a key must be a name, found a {} (line {}, column {})",
                         kv.first.IsSequence() ? "list"
                         : kv.first.IsMap()    ? "map"
                                               : "null",
                         kv.first.Mark().line + 1,
                         kv.first.Mark().column + 1));
      }
      out.push_back(kv.first.Scalar());
    }
  }
  return out;
}

namespace {

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) {
    return "nothing";
  }
  if (n.IsMap()) {
    return "a map";
  }
  if (n.IsSequence()) {
    return "a list";
  }
  return fmt::format("'{}'", n.Scalar());
}

}  // namespace

int64_t ConfigNode::as_int() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (const auto v = leading_integer(s)) {
      if (v->used == s.size()) {
        return v->value;
      }
      // Accept integral floats written as 1e4 or 100.0 (within int64_t's range).
      try {
        size_t used = 0;
        const double d = std::stod(s, &used);
        if (used == s.size() && std::abs(d) < 9.2e18 &&
            d == static_cast<double>(static_cast<int64_t>(d))) {
          return static_cast<int64_t>(d);
        }
      } catch (const std::exception&) {
      }
    }
  }
  fail(fmt::format("expected an integer, got {}", describe(node_)));
}

double ConfigNode::as_float() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    try {
      size_t used = 0;
      double v = std::stod(s, &used);
      if (used == s.size()) {
        return v;
      }
    } catch (const std::exception&) {
    }
  }
  fail(fmt::format("expected a number, got {}", describe(node_)));
}

bool ConfigNode::as_bool() const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (s == "true" || s == "True" || s == "yes" || s == "on") {
      return true;
    }
    if (s == "false" || s == "False" || s == "no" || s == "off") {
      return false;
    }
  }
  fail(fmt::format("expected true or false, got {}", describe(node_)));
}

std::string ConfigNode::as_string() const {
  if (node_.IsScalar()) {
    return node_.Scalar();
  }
  fail(fmt::format("expected a string, got {}", describe(node_)));
}

std::vector<int64_t> ConfigNode::as_int_list() const {
  if (node_.IsScalar()) {
    return {as_int()};  // a single value stands for a one-element list
  }
  if (!node_.IsSequence()) {
    fail(fmt::format("expected a list of integers, got {}", describe(node_)));
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < size(); ++i) {
    out.push_back(at(i).as_int());
  }
  return out;
}

std::vector<double> ConfigNode::as_float_list() const {
  if (!node_.IsSequence()) {
    fail(fmt::format("expected a list of numbers, got {}", describe(node_)));
  }
  std::vector<double> out;
  for (size_t i = 0; i < size(); ++i) {
    out.push_back(at(i).as_float());
  }
  return out;
}

std::vector<std::string> ConfigNode::as_string_list() const {
  if (node_.IsScalar()) {
    return {node_.Scalar()};
  }
  if (!node_.IsSequence()) {
    fail(fmt::format("expected a list of strings, got {}", describe(node_)));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < size(); ++i) {
    out.push_back(at(i).as_string());
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// MapReader

MapReader::MapReader(ConfigNode node) : node_(std::move(node)) {
  if (node_.defined() && !node_.is_map()) {
    node_.fail(fmt::format("expected a map of options, got {}", describe(node_.yaml())));
  }
}

ConfigNode MapReader::child(const std::string& key) {
  known_.push_back(key);
  return node_.child(key);
}

ConfigNode MapReader::required(const std::string& key) {
  ConfigNode c = child(key);
  if (!c.defined()) {
    // A misspelt key is the likely cause: point at it rather than at the map.
    for (const auto& present : node_.keys()) {
      if (!did_you_mean(present, {key}).empty()) {
        node_.key_node(present).fail(fmt::format(
            "unknown key '{}' (did you mean '{}'?); '{}' is required", present, key, key));
      }
    }
    node_.fail(fmt::format("missing required key '{}'", key));
  }
  return c;
}

bool MapReader::has(const std::string& key) const {
  return node_.child(key).defined();
}

int64_t MapReader::get_int(const std::string& key, int64_t fallback) {
  ConfigNode c = child(key);
  return c.defined() ? c.as_int() : fallback;
}

double MapReader::get_float(const std::string& key, double fallback) {
  ConfigNode c = child(key);
  return c.defined() ? c.as_float() : fallback;
}

bool MapReader::get_bool(const std::string& key, bool fallback) {
  ConfigNode c = child(key);
  return c.defined() ? c.as_bool() : fallback;
}

std::string MapReader::get_string(const std::string& key, const std::string& fallback) {
  ConfigNode c = child(key);
  return c.defined() ? c.as_string() : fallback;
}

std::string MapReader::get_choice(const std::string& key,
                                  const std::string& fallback,
                                  const std::vector<std::string>& choices) {
  ConfigNode c = child(key);
  if (!c.defined()) {
    return fallback;
  }
  std::string v = c.as_string();
  if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
    c.fail(fmt::format("'{}' is not one of {}{}", v, join(choices), did_you_mean(v, choices)));
  }
  return v;
}

void MapReader::ignore(const std::string& key) {
  known_.push_back(key);
}

void MapReader::finish() const {
  for (const auto& key : node_.keys()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      // Point at the offending key itself.
      node_.key_node(key).fail(fmt::format(
          "unknown key '{}'{}; valid keys here: {}", key, did_you_mean(key, known_), join(known_)));
    }
  }
}

}  // namespace lengen
