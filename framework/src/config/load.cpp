// Loading config files and strings, `--set` overrides, merging trees (`extends:`), YAML output.
#include "lengen/config/node.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace lengen {

namespace {

// Every map key in the tree is a name (a scalar): a key written as a list, a map or nothing
// (`{[a, b]: 1}`, `? {x: 1}`, `~: 1`) is refused where it is written, so that no reader of the
// tree meets one. Depth-limited: YAML aliases cannot make a cycle, but a hostile file can nest.
void check_keys(const YAML::Node& n, const std::string& name, int depth) {
  if (depth > 200) {
    throw Error(fmt::format("{}:{}:{}: nested more than 200 levels deep",
                            name,
                            n.Mark().line + 1,
                            n.Mark().column + 1));
  }
  if (n.IsMap()) {
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) {
        throw Error(fmt::format("{}:{}:{}: a key must be a name, found a {}",
                                name,
                                kv.first.Mark().line + 1,
                                kv.first.Mark().column + 1,
                                kv.first.IsSequence() ? "list"
                                : kv.first.IsMap()    ? "map"
                                                      : "null"));
      }
      check_keys(kv.second, name, depth + 1);
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n)
      check_keys(item, name, depth + 1);
  }
}

ConfigNode parse(const std::string& text, const std::string& name) {
  auto source = std::make_shared<ConfigSource>();
  source->file = name;
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format(
        "{}:{}:{}: malformed YAML: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  check_keys(node, name, 0);
  return ConfigNode(node, source, "");
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

YAML::Node merge_yaml(const YAML::Node& base,
                      const YAML::Node& over,
                      const std::vector<std::string>& replace) {
  // A key set to nothing keeps the base's value; where the base has none either, the nothing stays
  // (a missing key of a const map is an invalid node that no tree may hold).
  if (!over.IsDefined() || over.IsNull())
    return base.IsDefined() ? base : over;
  if (!base.IsDefined() || base.IsNull() || !base.IsMap() || !over.IsMap())
    return over;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : base) {
    const std::string k = kv.first.as<std::string>();
    // force_insert keeps the key nodes themselves, so errors still point at their lines.
    if (!over[k].IsDefined())
      out.force_insert(kv.first, kv.second);
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

ConfigNode merge_config(const ConfigNode& base,
                        const ConfigNode& over,
                        const std::vector<std::string>& replace_keys) {
  return ConfigNode(merge_yaml(base.yaml(), over.yaml(), replace_keys),
                    base.source() ? base.source() : over.source(),
                    base.path());
}

ConfigNode without_keys(const ConfigNode& node, const std::vector<std::string>& keys) {
  if (!node.is_map())
    return node;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& kv : node.yaml()) {
    const std::string k = kv.first.as<std::string>();
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      out.force_insert(kv.first, kv.second);
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
    if (parts.empty()) {
      throw Error(fmt::format("--set {}: '{}' names no key; expected key.path=value", text, key));
    }
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw Error(fmt::format("--set {}: the value is not valid YAML: {}", text, e.msg));
    }
    check_keys(parsed, "--set " + text, 0);
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
          throw Error(fmt::format("--set {}: index {} is past the end of '{}' ({} entries)",
                                  text,
                                  idx,
                                  path,
                                  parent.size()));
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
      throw Error(fmt::format(
          "--set {}: '{}' is a list; use an index like {}.0.{}", text, path, path, last));
    } else if (parent.IsScalar()) {
      throw Error(
          fmt::format("--set {}: '{}' is a value ({}), not a map; nothing can be set below it",
                      text,
                      path,
                      parent.Scalar()));
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

}  // namespace lengen
