#include "lengen/config/node.h"
#include "lengen/config/schema.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

namespace lengen {

// ---------------------------------------------------------------------------------------
// ConfigNode

ConfigNode::ConfigNode(YAML::Node node, std::shared_ptr<const ConfigSource> source, std::string path)
    : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}

namespace {

// Whether `node` is `tree` or lies inside it (node identity, not equal values).
bool contains_node(const YAML::Node& tree, const YAML::Node& node) {
  if (tree.is(node)) return true;
  if (tree.IsMap()) {
    for (const auto& kv : tree) {
      if (kv.first.is(node) || contains_node(kv.second, node)) return true;
    }
  } else if (tree.IsSequence()) {
    for (const auto& v : tree) {
      if (contains_node(v, node)) return true;
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
      out.push_back(kv.first.as<std::string>());
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
    try {
      size_t used = 0;
      long long v = std::stoll(s, &used, 10);
      if (used == s.size()) {
        return v;
      }
      // Accept integral floats written as 1e4 or 100.0.
      double d = std::stod(s, &used);
      if (used == s.size() && d == static_cast<double>(static_cast<int64_t>(d))) {
        return static_cast<int64_t>(d);
      }
    } catch (const std::exception&) {
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

bool MapReader::has(const std::string& key) const { return node_.child(key).defined(); }

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

void MapReader::ignore(const std::string& key) { known_.push_back(key); }

void MapReader::finish() const {
  for (const auto& key : node_.keys()) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
      // Point at the offending key itself.
      node_.key_node(key).fail(fmt::format("unknown key '{}'{}; valid keys here: {}", key,
                                        did_you_mean(key, known_), join(known_)));
    }
  }
}

// ---------------------------------------------------------------------------------------
// Loading and overrides

namespace {

ConfigNode parse(const std::string& text, const std::string& name) {
  auto source = std::make_shared<ConfigSource>();
  source->file = name;
  try {
    return ConfigNode(YAML::Load(text), source, "");
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}:{}:{}: malformed YAML: {}", name, e.mark.line + 1,
                            e.mark.column + 1, e.msg));
  }
}

}  // namespace

ConfigNode load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(fmt::format("{}: cannot open the experiment file (does it exist?)", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  ConfigNode root = parse(ss.str(), path);
  if (!root.is_map()) {
    throw Error(fmt::format("{}: expected a YAML map at the top level", path));
  }
  return root;
}

ConfigNode load_config_string(const std::string& text, const std::string& name) {
  return parse(text, name);
}

namespace {

YAML::Node merge_yaml(const YAML::Node& base, const YAML::Node& over, const std::vector<std::string>& replace) {
  if (!over.IsDefined() || over.IsNull()) return base;
  if (!base.IsDefined() || base.IsNull() || !base.IsMap() || !over.IsMap()) return over;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : base) {
    const std::string k = kv.first.as<std::string>();
    // force_insert keeps the key nodes themselves, so errors still point at their lines.
    if (!over[k].IsDefined()) out.force_insert(kv.first, kv.second);
  }
  for (const auto& kv : over) {
    const std::string k = kv.first.as<std::string>();
    const YAML::Node b = base[k];
    const bool whole = std::find(replace.begin(), replace.end(), k) != replace.end();
    out.force_insert(kv.first, whole ? kv.second : merge_yaml(b, kv.second, {}));
  }
  return out;
}

}  // namespace

ConfigNode merge_config(const ConfigNode& base, const ConfigNode& over,
                        const std::vector<std::string>& replace_keys) {
  return ConfigNode(merge_yaml(base.yaml(), over.yaml(), replace_keys), base.source() ? base.source() : over.source(),
                    base.path());
}

ConfigNode without_keys(const ConfigNode& node, const std::vector<std::string>& keys) {
  if (!node.is_map()) return node;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : node.yaml()) {
    const std::string k = kv.first.as<std::string>();
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) out.force_insert(kv.first, kv.second);
  }
  return ConfigNode(out, node.source(), node.path());
}

ConfigNode apply_overrides(const ConfigNode& root, const std::vector<std::string>& assignments) {
  auto source = std::make_shared<ConfigSource>(root.source() ? *root.source() : ConfigSource{});
  // Edit the loaded tree in place (a clone would lose the line marks of every node).
  YAML::Node tree = root.yaml();
  for (const auto& text : assignments) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(fmt::format("--set {}: expected key.path=value", text));
    }
    std::string key = text.substr(0, eq);
    std::string value = text.substr(eq + 1);
    // Split "a.b[2].c" / "a.b.2.c" into components.
    std::vector<std::string> parts;
    std::string cur;
    for (char ch : key) {
      if (ch == '.' || ch == '[' || ch == ']') {
        if (!cur.empty()) {
          parts.push_back(cur);
        }
        cur.clear();
      } else {
        cur += ch;
      }
    }
    if (!cur.empty()) {
      parts.push_back(cur);
    }
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw Error(fmt::format("--set {}: the value is not valid YAML: {}", text, e.msg));
    }
    // Walk with assignment semantics (YAML::Node operator= rebinds), so copy-walk by index.
    std::vector<YAML::Node> chain{tree};
    std::string path;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node parent = chain.back();
      const std::string& p = parts[i];
      bool is_index = !p.empty() && std::all_of(p.begin(), p.end(), ::isdigit);
      YAML::Node next;
      if (parent.IsSequence() && is_index) {
        size_t idx = std::stoul(p);
        if (idx >= parent.size()) {
          throw Error(fmt::format("--set {}: index {} is past the end of '{}' ({} entries)", text,
                                  idx, path, parent.size()));
        }
        next = parent[idx];
      } else if (parent.IsMap() || !parent.IsDefined() || parent.IsNull()) {
        next = parent[p];
        if (!next.IsDefined() || next.IsNull()) {
          parent[p] = YAML::Node(YAML::NodeType::Map);
          next = parent[p];
        }
      } else {
        throw Error(fmt::format("--set {}: '{}' is not a map or list", text, path));
      }
      path += (path.empty() ? "" : ".") + p;
      chain.push_back(next);
    }
    YAML::Node parent = chain.back();
    const std::string& last = parts.back();
    bool is_index = std::all_of(last.begin(), last.end(), ::isdigit);
    if (parent.IsSequence() && is_index) {
      size_t idx = std::stoul(last);
      if (idx >= parent.size()) {
        throw Error(fmt::format("--set {}: index {} is past the end of the list", text, idx));
      }
      parent[idx] = parsed;
    } else if (parent.IsSequence()) {
      throw Error(fmt::format("--set {}: '{}' is a list; use an index like {}.0.{}", text, path,
                              path, last));
    } else {
      parent[last] = parsed;
    }
    // Normalise the recorded path to the form ConfigNode uses ("a.b[0].c").
    std::string norm;
    for (size_t i = 0; i < parts.size(); ++i) {
      bool idx = std::all_of(parts[i].begin(), parts[i].end(), ::isdigit);
      norm += idx ? "[" + parts[i] + "]" : (norm.empty() ? "" : ".") + parts[i];
    }
    source->overrides[norm] = "--set " + text;
  }
  return ConfigNode(tree, source, "");
}

std::string to_yaml(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

// ---------------------------------------------------------------------------------------
// Schemas

const char* option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "int";
    case OptionType::kFloat:
      return "float";
    case OptionType::kBool:
      return "bool";
    case OptionType::kString:
      return "string";
    case OptionType::kIntList:
      return "list<int>";
    case OptionType::kFloatList:
      return "list<float>";
    case OptionType::kMap:
      return "map";
    case OptionType::kMapList:
      return "list<map>";
    case OptionType::kStringList:
      return "list<string>";
  }
  return "?";
}

namespace {
OptionSpec make_spec(std::string key, OptionType type, std::string doc) {
  OptionSpec s;
  s.key = std::move(key);
  s.type = type;
  s.doc = std::move(doc);
  return s;
}
}  // namespace

OptionSpec OptionSpec::integer(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kInt, std::move(doc));
}
OptionSpec OptionSpec::number(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kFloat, std::move(doc));
}
OptionSpec OptionSpec::boolean(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kBool, std::move(doc));
}
OptionSpec OptionSpec::string(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kString, std::move(doc));
}
OptionSpec OptionSpec::int_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kIntList, std::move(doc));
}
OptionSpec OptionSpec::float_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kFloatList, std::move(doc));
}
OptionSpec OptionSpec::string_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kStringList, std::move(doc));
}

OptionSpec OptionSpec::map(std::string key, std::string doc, std::vector<OptionSpec> fields) {
  OptionSpec s = make_spec(std::move(key), OptionType::kMap, std::move(doc));
  s.fields = std::move(fields);
  return s;
}
OptionSpec OptionSpec::map_list(std::string key, std::string doc, std::vector<OptionSpec> fields) {
  OptionSpec s = make_spec(std::move(key), OptionType::kMapList, std::move(doc));
  s.fields = std::move(fields);
  return s;
}

std::string OptionSpec::describe_type() const {
  std::string s = option_type_name(type);
  if (!choices.empty()) {
    s = "one of {" + join(choices, ", ") + "}";
  }
  if (type == OptionType::kMap || type == OptionType::kMapList) {
    // Maps default field by field.
  } else if (optional) {
    s += ", optional";
  } else if (default_value) {
    std::string d = default_value->Scalar();
    if (type == OptionType::kFloat) {
      d = fmt::format("{:g}", default_value->as<double>());  // 0.9, not 0.90000000000000002
    }
    if (!default_value->IsScalar()) {
      YAML::Emitter e;
      e << YAML::Flow << *default_value;
      d = e.c_str();
    }
    s += ", default " + d;
  } else {
    s += ", required";
  }
  if (min) {
    s += fmt::format(", >= {}", *min);
  }
  if (max) {
    s += fmt::format(", <= {}", *max);
  }
  return s;
}

Options Options::validate(const ComponentSpec& spec,
                          const ConfigNode& node_in,
                          const std::vector<std::string>& skip) {
  Options o;
  const bool section = spec.kind == "section";
  o.component_ = section ? spec.name : fmt::format("{} '{}'", spec.kind, spec.name);
  o.specs_ = spec.options;
  ConfigNode node = node_in;
  // A bare name (scalar) selects the component with default options.
  if (node.defined() && !node.is_map() && !node.is_scalar()) {
    node.fail(fmt::format("expected a map of options for {}", o.component_));
  }
  if (section && node.defined() && !node.is_map()) {
    node.fail(fmt::format("{}: expected a map", o.component_));
  }
  std::vector<std::string> known;
  for (const auto& opt : spec.options) {
    known.push_back(opt.key);
  }
  for (const auto& key : node.keys()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) {
      continue;
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      if (section) {
        node.key_node(key).fail(fmt::format("unknown key '{}'{}; valid keys here: {}", key,
                                            did_you_mean(key, known), join(known)));
      }
      node.key_node(key).fail(fmt::format("unknown option '{}' for {}{}; its options are: {}", key,
                                       o.component_, did_you_mean(key, known),
                                       known.empty() ? "none" : join(known)));
    }
  }
  auto check_range = [&](const OptionSpec& opt, const ConfigNode& c, double v) {
    if ((opt.min && v < *opt.min) || (opt.max && v > *opt.max)) {
      std::string range = opt.min && opt.max ? fmt::format("between {} and {}", *opt.min, *opt.max)
                          : opt.min          ? fmt::format(">= {}", *opt.min)
                                             : fmt::format("<= {}", *opt.max);
      if (section) {
        c.fail(fmt::format("{}.{} must be {}, got {}", o.component_, opt.key, range, v));
      }
      c.fail(fmt::format("option '{}' of {} must be {}, got {}", opt.key, o.component_, range, v));
    }
  };
  for (const auto& opt : spec.options) {
    ConfigNode c = node.child(opt.key);
    if (c.defined()) {
      o.given_.push_back(opt.key);
    } else if (opt.type == OptionType::kMap || opt.type == OptionType::kMapList || opt.optional) {
      // Absent: a map of defaults, an empty list, or nothing.
    } else if (opt.default_value) {
      auto src = std::make_shared<ConfigSource>();
      src->file = fmt::format("default of {}", o.component_);
      c = ConfigNode(*opt.default_value, src, opt.key);
    } else {
      node.fail(fmt::format("{} needs option '{}' ({}: {})", o.component_, opt.key,
                            option_type_name(opt.type), opt.doc));
    }
    if (!c.defined()) {
      o.values_.emplace_back(opt.key, c);
      if (opt.type == OptionType::kMap && !opt.open) {
        Options::validate({"section", o.component_ + "." + opt.key, "", opt.fields}, c, {});
      }
      continue;
    }
    switch (opt.type) {
      case OptionType::kInt:
        check_range(opt, c, static_cast<double>(c.as_int()));
        break;
      case OptionType::kFloat:
        check_range(opt, c, c.as_float());
        break;
      case OptionType::kBool:
        c.as_bool();
        break;
      case OptionType::kString: {
        std::string v = c.as_string();
        if (!opt.choices.empty() &&
            std::find(opt.choices.begin(), opt.choices.end(), v) == opt.choices.end()) {
          if (section) {
            c.fail(fmt::format("{}.{} must be one of {}, got '{}'{}", o.component_, opt.key, join(opt.choices), v,
                               did_you_mean(v, opt.choices)));
          }
          c.fail(fmt::format("option '{}' of {} must be one of {}, got '{}'{}", opt.key,
                             o.component_, join(opt.choices), v, did_you_mean(v, opt.choices)));
        }
        break;
      }
      case OptionType::kIntList:
        for (int64_t v : c.as_int_list()) {
          check_range(opt, c, static_cast<double>(v));
        }
        break;
      case OptionType::kFloatList:
        for (double v : c.as_float_list()) {
          check_range(opt, c, v);
        }
        break;
      case OptionType::kStringList:
        for (const std::string& v : c.as_string_list()) {
          if (!opt.choices.empty() &&
              std::find(opt.choices.begin(), opt.choices.end(), v) == opt.choices.end()) {
            c.fail(fmt::format("{}.{}: every entry must be one of {}, got '{}'{}", o.component_, opt.key,
                               join(opt.choices), v, did_you_mean(v, opt.choices)));
          }
        }
        break;
      case OptionType::kMap:
        if (c.is_scalar() && !opt.shorthand.empty()) {
          YAML::Node m(YAML::NodeType::Map);
          m[opt.shorthand] = c.yaml();
          c = ConfigNode(m, c.source(), c.path());
        }
        if (!c.is_map()) {
          c.fail(fmt::format("{}.{}: expected a map{}", o.component_, opt.key,
                             opt.shorthand.empty() ? "" : fmt::format(" or a {} name", opt.shorthand)));
        }
        if (!opt.open) {
          Options::validate({"section", o.component_ + "." + opt.key, "", opt.fields}, c, {});
        }
        break;
      case OptionType::kMapList:
        if (!c.is_sequence()) {
          c.fail(fmt::format("{}.{}: expected a list of maps", o.component_, opt.key));
        }
        for (size_t i = 0; i < c.size(); ++i) {
          Options::validate({"section", fmt::format("{}.{}[{}]", o.component_, opt.key, i), "", opt.fields}, c.at(i),
                            {});
        }
        break;
    }
    o.values_.emplace_back(opt.key, c);
  }
  return o;
}

Options Options::get_map(const std::string& key) const {
  for (const auto& opt : specs_) {
    if (opt.key == key && opt.type == OptionType::kMap) {
      return Options::validate({"section", component_ + "." + key, "", opt.fields}, node_of(key), {});
    }
  }
  throw Error(fmt::format("internal: {} has no map option '{}'", component_, key));
}

std::vector<Options> Options::get_map_list(const std::string& key) const {
  for (const auto& opt : specs_) {
    if (opt.key == key && opt.type == OptionType::kMapList) {
      std::vector<Options> out;
      const ConfigNode& n = node_of(key);
      for (size_t i = 0; i < (n.defined() ? n.size() : 0); ++i) {
        out.push_back(Options::validate({"section", fmt::format("{}.{}[{}]", component_, key, i), "", opt.fields},
                                        n.at(i), {}));
      }
      return out;
    }
  }
  throw Error(fmt::format("internal: {} has no map-list option '{}'", component_, key));
}

const ConfigNode& Options::node_of(const std::string& key) const {
  for (const auto& [k, n] : values_) {
    if (k == key) {
      return n;
    }
  }
  throw Error(fmt::format("internal: {} has no declared option '{}'", component_, key));
}

int64_t Options::get_int(const std::string& key) const { return node_of(key).as_int(); }
double Options::get_float(const std::string& key) const { return node_of(key).as_float(); }
bool Options::get_bool(const std::string& key) const { return node_of(key).as_bool(); }
std::string Options::get_string(const std::string& key) const { return node_of(key).as_string(); }
std::vector<int64_t> Options::get_int_list(const std::string& key) const {
  return node_of(key).as_int_list();
}
std::vector<double> Options::get_float_list(const std::string& key) const {
  return node_of(key).as_float_list();
}
std::vector<std::string> Options::get_string_list(const std::string& key) const {
  return node_of(key).as_string_list();
}
std::pair<int64_t, int64_t> Options::get_int_range(const std::string& key) const {
  auto v = get_int_list(key);
  if (v.size() == 1) {
    v.push_back(v[0]);
  }
  if (v.size() != 2 || v[0] > v[1]) {
    fail(key, "expected [lo, hi] with lo <= hi");
  }
  return {v[0], v[1]};
}
bool Options::given(const std::string& key) const {
  return std::find(given_.begin(), given_.end(), key) != given_.end();
}

void Options::fail(const std::string& key, const std::string& message) const {
  node_of(key).fail(fmt::format("{}: {}", component_, message));
}

YAML::Node Options::to_yaml() const {
  YAML::Node out(YAML::NodeType::Map);
  for (size_t i = 0; i < values_.size(); ++i) {
    const auto& [k, n] = values_[i];
    const OptionSpec* opt = i < specs_.size() && specs_[i].key == k ? &specs_[i] : nullptr;
    if (opt && opt->type == OptionType::kMap && !opt->open) {
      out[k] = get_map(k).to_yaml();  // nested defaults filled in
    } else if (opt && opt->type == OptionType::kMapList) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& m : get_map_list(k)) list.push_back(m.to_yaml());
      out[k] = list;
    } else if (n.defined()) {
      out[k] = YAML::Clone(n.yaml());
    }
  }
  return out;
}

}  // namespace lengen
