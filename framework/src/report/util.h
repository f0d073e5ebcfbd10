#pragma once
// What the reproduction page's sources share (reproduction.cpp defines them; collect.cpp uses
// them too). Not installed.
#include "lengen/config/node.h"
#include "lengen/report/reproduction.h"

#include <filesystem>
#include <limits>
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

/// Where a figure is missing.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// `text` as a finite number; fails naming `where`. (data_set.cpp defines the rest.)
double parse_number(const std::string& text, const std::string& where);

/// A percentage in a YAML file (100, 99.5) as a fraction; `~` or absent: NaN.
double percent_of(const ConfigNode& node);

/// Fails naming `where` unless `s` is median, mean or best.
void check_statistic(const std::string& s, const std::string& where);

/// aggregate/results.csv's lines into `set`: one line per run and cell.
void read_results(const std::filesystem::path& path, DataSet& set);

}  // namespace lengen
