#pragma once

#include "lengen/core/export.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lengen {

/// The exception lengen throws for every user-facing failure: bad config, unknown plugin,
/// impossible length, missing file, NaN loss. Its what() is the complete message the CLI
/// prints; it names the file, line, key or library and what was expected.
class LENGEN_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
  ~Error() override;
};

/// A run stopped on request (SIGINT/SIGTERM) after writing its checkpoint: not a failure. The
/// CLI exits with kExitInterrupted for it, so a supervisor (a sweep, a Slurm array task) can
/// tell an interrupted, resumable run from a failed one by the exit status alone.
class LENGEN_API Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& message);
  ~Interrupted() override;
};

/// Exit status of `lengen run` when it was interrupted and can be resumed (sysexits'
/// EX_TEMPFAIL: "try again later").
inline constexpr int kExitInterrupted = 75;

/// The candidate closest to `word` by edit distance, or "" when nothing is close enough to
/// be a plausible typo. Used for "did you mean ...?" hints.
LENGEN_API std::string closest_match(std::string_view word,
                                     const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" when a close candidate exists, else "".
LENGEN_API std::string did_you_mean(std::string_view word,
                                    const std::vector<std::string>& candidates);

/// "a, b, c" for messages.
LENGEN_API std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace lengen

/// Throws lengen::Error with a fmt-formatted message when `cond` is false.
#define LENGEN_CHECK(cond, ...)                          \
  do {                                                   \
    if (!(cond)) {                                       \
      throw ::lengen::Error(::fmt::format(__VA_ARGS__)); \
    }                                                    \
  } while (0)

/// Throws lengen::Error with a fmt-formatted message.
#define LENGEN_FAIL(...) throw ::lengen::Error(::fmt::format(__VA_ARGS__))
