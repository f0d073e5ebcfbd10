#pragma once
// What the reproduction page's sources share (reproduction.cpp defines them; collect.cpp uses
// them too). Not installed.
#include <filesystem>
#include <string>

namespace lengen {

/// The whole file; fails naming it when it cannot be read.
std::string slurp(const std::filesystem::path& path);

/// The UTC day a file was last written, "2026-12-06" ("" when it cannot be read).
std::string utc_date_of(const std::string& path);

/// `s` as a double-quoted YAML scalar.
std::string yaml_quote(const std::string& s);

/// A sweep's aggregate: SWEEP/aggregate, or for a named evaluation of its runs
/// SWEEP/aggregate/evals/NAME (the aggregate folder mirrors a run's: lengen aggregate --eval).
std::filesystem::path aggregate_of(const std::filesystem::path& sweep,
                                   const std::string& eval_name);

}  // namespace lengen
