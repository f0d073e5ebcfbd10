#include "lengen/core/error.h"

#include "lengen/core/log.h"
#include "lengen/core/version.h"

#include <torch/version.h>

#include <spdlog/sinks/stdout_color_sinks.h>

#include <algorithm>
#include <mutex>

namespace lengen {

Error::Error(const std::string& message) : std::runtime_error(message) {}

Error::~Error() = default;

Interrupted::Interrupted(const std::string& message) : Error(message) {}

Interrupted::~Interrupted() = default;

namespace {

// Optimal-string-alignment distance: Levenshtein plus adjacent transpositions ("modle").
size_t edit_distance(std::string_view a, std::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) {
    d[i][0] = i;
  }
  for (size_t j = 0; j <= m; ++j) {
    d[0][j] = j;
  }
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A plausible typo: at most a third of the longer word differs (at least 1 edit allowed).
  size_t limit = std::max<size_t>(1, std::max(word.size(), best.size()) / 3);
  return best_d <= limit ? best : "";
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string m = closest_match(word, candidates);
  return m.empty() ? "" : fmt::format(" (did you mean '{}'?)", m);
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) {
      out += sep;
    }
    out += items[i];
  }
  return out;
}

std::string torch_version() {
  return fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
}

namespace {
std::mutex g_log_mutex;
spdlog::level::level_enum g_level = spdlog::level::info;
}  // namespace

std::shared_ptr<spdlog::logger> logger(const char* name) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (auto l = spdlog::get(name)) {
    return l;
  }
  auto l = spdlog::stderr_color_mt(name);
  l->set_pattern("[%H:%M:%S] %^%l%$ %n: %v");
  l->set_level(g_level);
  return l;
}

void set_log_level(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_level = lvl;
  }
  spdlog::apply_all([&](std::shared_ptr<spdlog::logger> l) { l->set_level(lvl); });
}

}  // namespace lengen
