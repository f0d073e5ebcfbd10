// The sweep's shared helpers (util.h).
#include "util.h"

#include "lengen/core/error.h"

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

}  // namespace lengen::sweep
