// The sweep's shared helpers (util.h).
#include "util.h"

#include "lengen/core/error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <vector>

namespace lengen::sweep {

std::string flow(const YAML::Node& n) {
  YAML::Emitter e;
  e.SetMapFormat(YAML::Flow);
  e.SetSeqFormat(YAML::Flow);
  e << n;
  return e.c_str();
}

std::string label(const YAML::Node& n, bool detailed) {
  if (n.IsScalar())
    return n.as<std::string>();
  if (n.IsMap() && n["name"]) {
    std::string s = n["name"].as<std::string>();
    if (!detailed)
      return s;
    for (const auto& kv : n) {
      const auto k = kv.first.as<std::string>();
      if (k != "name")
        s += "_" + k + "=" + label(kv.second, true);
    }
    return s;
  }
  if (n.IsSequence()) {
    std::vector<std::string> parts;
    for (const auto& e : n)
      parts.push_back(label(e, detailed));
    return join(parts, "+");
  }
  return flow(n);
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
            c == '=' || c == '+' || c == ',')
               ? c
               : '_';
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  const int rc = ::pclose(p);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

// Whether an axis value is the one a user wrote: the same YAML, or for a scalar, the value's
// component label (`coupling` for `[{name: coupling, max_position: 101}]`).
bool value_matches(const YAML::Node& want, const YAML::Node& have) {
  return flow(want) == flow(have) ||
         (want.IsScalar() && (want.as<std::string>() == label(have, false) ||
                              want.as<std::string>() == label(have, true)));
}

// A `labels:` name written for `key` stands for its value; anything else is returned as written.
YAML::Node resolve_label(const std::map<std::string, std::map<std::string, std::string>>& labels,
                         const std::string& key,
                         const YAML::Node& want) {
  const auto named = labels.find(key);
  if (named == labels.end() || !want.IsScalar())
    return want;
  const std::string written = want.as<std::string>();
  for (const auto& [value, name] : named->second) {
    if (name == written)
      return YAML::Load(value);
  }
  return want;
}

// The value at a dotted key (`model.shared_layers`) of a YAML tree; undefined where it has none.
YAML::Node value_at(const YAML::Node& tree, const std::string& key) {
  if (!tree.IsMap())
    return YAML::Node(YAML::NodeType::Undefined);
  const auto dot = key.find('.');
  const YAML::Node child = tree[key.substr(0, dot)];
  if (!child)
    return YAML::Node(YAML::NodeType::Undefined);
  return dot == std::string::npos ? child : value_at(child, key.substr(dot + 1));
}

// A point's value of an axis key: the value it sets, or for a point that does not set the key
// (an explicit point, or a grid point beside explicit ones), the value its resolved experiment
// has there (`model.shared_layers: false` from the base). Undefined where neither has it.
YAML::Node point_value(const std::vector<std::pair<std::string, YAML::Node>>& values,
                       const YAML::Node& resolved,
                       const std::string& key) {
  auto it =
      std::find_if(values.begin(), values.end(), [&](const auto& kv) { return kv.first == key; });
  return it != values.end() ? it->second : value_at(resolved, key);
}

YAML::Node point_value(const Point& p, const std::string& key) {
  auto it = std::find_if(
      p.varied.begin(), p.varied.end(), [&](const auto& kv) { return kv.first == key; });
  return it != p.varied.end() ? YAML::Load(it->second) : value_at(YAML::Load(p.resolved), key);
}

}  // namespace lengen::sweep
