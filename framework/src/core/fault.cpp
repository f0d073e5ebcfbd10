// LENGEN_FAULT: named moments where a test has the process killed or stopped (core/fault.h).
#include "lengen/core/fault.h"

#include "lengen/core/error.h"

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace lengen::fault {

namespace {

struct Rule {
  int signal = SIGKILL;
  std::string site;
  long n = 1;
  long seen = 0;
};

// Parsed once; a malformed variable is an error at the first moment, naming it.
bool g_trace = false;  // LENGEN_FAULT=trace: every moment reached is printed with its count

std::vector<Rule>* parse_rules() {
  const char* env = std::getenv("LENGEN_FAULT");
  if (env == nullptr || *env == '\0')
    return nullptr;
  auto* rules = new std::vector<Rule>();
  const std::string text = env;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = text.find(',', begin);
    const std::string item =
        text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item == "trace") {
      g_trace = true;
      if (comma == std::string::npos)
        break;
      begin = comma + 1;
      continue;
    }
    const size_t at = item.find('@'), hash = item.rfind('#');
    if (at == std::string::npos || hash == std::string::npos || hash < at) {
      throw Error(fmt::format(
          "LENGEN_FAULT: '{}' is not ACTION@SITE#N (e.g. kill@write:grid.csv#1)", item));
    }
    Rule r;
    const std::string action = item.substr(0, at);
    if (action == "kill") {
      r.signal = SIGKILL;
    } else if (action == "stop") {
      r.signal = SIGSTOP;
    } else {
      throw Error(
          fmt::format("LENGEN_FAULT: unknown action '{}' in '{}' (kill or stop)", action, item));
    }
    r.site = item.substr(at + 1, hash - at - 1);
    char* end = nullptr;
    r.n = std::strtol(item.c_str() + hash + 1, &end, 10);
    if (r.site.empty() || end == item.c_str() + hash + 1 || *end != '\0' || r.n < 1) {
      throw Error(
          fmt::format("LENGEN_FAULT: '{}' needs a site and a count N >= 1 after '#'", item));
    }
    rules->push_back(r);
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  return rules;
}

std::vector<Rule>* rules() {
  static std::vector<Rule>* parsed = parse_rules();
  return parsed;
}

}  // namespace

void reached(std::string_view site) {
  std::vector<Rule>* all = rules();
  if (all == nullptr)
    return;
  static std::mutex mutex;
  std::lock_guard<std::mutex> guard(mutex);
  if (g_trace) {
    static std::map<std::string, long, std::less<>> counts;
    fmt::print(stderr, "LENGEN_FAULT: reached '{}' #{}\n", site, ++counts[std::string(site)]);
  }
  for (Rule& r : *all) {
    if (site.substr(0, r.site.size()) != r.site || ++r.seen != r.n)
      continue;
    fmt::print(stderr,
               "LENGEN_FAULT: {} at '{}' (#{})\n",
               r.signal == SIGKILL ? "kill" : "stop",
               site,
               r.n);
    std::fflush(stderr);
    ::kill(::getpid(), r.signal);
  }
}

void reached(std::string_view prefix, std::string_view name) {
  if (rules() == nullptr)
    return;
  std::string site(prefix);
  site += name;
  reached(site);
}

}  // namespace lengen::fault
