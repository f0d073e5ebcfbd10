// A grid evaluation's results: the breakdown of a cell, the Wilson interval, and the files
// (grid.csv, breakdown.csv, summary.json).
#include "lengen/eval/grid_results.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

std::pair<double, double> wilson_interval(int64_t k, int64_t n) {
  if (n <= 0) {
    return {0.0, 1.0};
  }
  const double z = 1.959963984540054;
  const double p = static_cast<double>(k) / static_cast<double>(n);
  const double nn = static_cast<double>(n);
  const double denom = 1 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

void CellAnalysis::add(const std::map<std::string, int64_t>& features,
                       const std::vector<std::string>& wanted,
                       bool correct,
                       const std::vector<int64_t>& reference,
                       const std::vector<int64_t>& response) {
  for (const auto& f : wanted) {
    auto it = features.find(f);
    LENGEN_CHECK(
        it != features.end(), "eval.breakdown: the task wrote no feature '{}' for this example", f);
    auto& [n, k] = by_feature[f][it->second];
    ++n;
    k += correct ? 1 : 0;
  }
  int64_t wrong = 0, where = -1;
  const size_t len = std::max(reference.size(), response.size());
  for (size_t i = 0; i < len; ++i) {
    const bool same = i < reference.size() && i < response.size() && reference[i] == response[i];
    if (!same) {
      ++wrong;
      where = static_cast<int64_t>(i);
      ++error_positions[where];
    }
  }
  if (!correct) {
    ++wrong_tokens[wrong];
    if (wrong == 1) {
      ++single_error_position[where];
    }
  }
}

static nlohmann::json analysis_json(const CellAnalysis& a) {
  auto histogram = [](const std::map<int64_t, int64_t>& h) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [k, n] : h) {
      out.push_back({k, n});
    }
    return out;
  };
  nlohmann::json j;
  j["by_feature"] = nlohmann::json::object();
  for (const auto& [feature, values] : a.by_feature) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [value, nk] : values) {
      rows.push_back(
          {{"value", value},
           {"samples", nk.first},
           {"correct", nk.second},
           {"accuracy", static_cast<double>(nk.second) / static_cast<double>(nk.first)}});
    }
    j["by_feature"][feature] = rows;
  }
  j["wrong_tokens"] = histogram(a.wrong_tokens);                    // [count, samples]
  j["single_error_position"] = histogram(a.single_error_position);  // [position, samples]
  j["error_positions"] = histogram(a.error_positions);              // [position, samples]
  return j;
}

TrainedRanges trained_ranges(const std::vector<GridAxis>& axes) {
  TrainedRanges out;
  for (const auto& a : axes) {
    if (a.train_hi > 0) {
      out[a.name] = {a.train_lo, a.train_hi};
    }
  }
  return out;
}

void write_grid_results(const RunDir& run,
                        const std::vector<CellResult>& results,
                        const std::vector<std::string>& axes,
                        const std::string& metric,
                        const TrainedRanges& trained) {
  std::string csv;
  for (const auto& a : axes) {
    csv += a + ",";
  }
  csv += "samples,correct,accuracy,ci_low,ci_high\n";
  nlohmann::json cells = nlohmann::json::array();
  int64_t total = 0, total_correct = 0;
  std::string breakdown_csv;
  for (const auto& a : axes) {
    breakdown_csv += a + ",";
  }
  breakdown_csv += "feature,value,samples,correct,accuracy\n";
  bool any_analysis = false;
  for (const auto& r : results) {
    any_analysis = any_analysis || !r.analysis.empty();
  }
  for (const auto& r : results) {
    nlohmann::json c;
    for (const auto& a : axes) {
      csv += fmt::format("{},", r.cell.at(a));
      c[a] = r.cell.at(a);
    }
    csv += fmt::format(
        "{},{},{:.6f},{:.6f},{:.6f}\n", r.samples, r.correct, r.accuracy, r.ci_low, r.ci_high);
    c["samples"] = r.samples;
    c["correct"] = r.correct;
    c["accuracy"] = r.accuracy;
    c["ci95"] = {r.ci_low, r.ci_high};
    c["tokens"] = r.tokens;
    c["seconds"] = r.seconds;
    // The most frequent first errors, most frequent first (what a failing cell gets wrong).
    std::vector<std::pair<int64_t, std::pair<std::string, std::string>>> errs;
    for (const auto& [tokens, n] : r.first_errors) {
      errs.emplace_back(n, tokens);
    }
    std::stable_sort(
        errs.begin(), errs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    c["first_errors"] = nlohmann::json::array();
    for (size_t i = 0; i < std::min<size_t>(errs.size(), 5); ++i) {
      c["first_errors"].push_back({{"expected", errs[i].second.first},
                                   {"predicted", errs[i].second.second},
                                   {"samples", errs[i].first}});
    }
    if (!r.analysis.empty()) {
      c["analysis"] = analysis_json(r.analysis);
      for (const auto& [feature, values] : r.analysis.by_feature) {
        for (const auto& [value, nk] : values) {
          for (const auto& a : axes) {
            breakdown_csv += fmt::format("{},", r.cell.at(a));
          }
          breakdown_csv +=
              fmt::format("{},{},{},{},{:.6f}\n",
                          feature,
                          value,
                          nk.first,
                          nk.second,
                          static_cast<double>(nk.second) / static_cast<double>(nk.first));
        }
      }
    }
    cells.push_back(c);
    total += r.samples;
    total_correct += r.correct;
  }
  nlohmann::json summary{
      {"axes", axes},
      {"cells", cells},
      {"samples", total},
      {"mean_accuracy", total ? static_cast<double>(total_correct) / total : 0.0},
      {"metric", metric}};
  summary["trained"] = nlohmann::json::object();
  for (const auto& [axis, range] : trained) {
    summary["trained"][axis] = {range.first, range.second};
  }
  // eval.examples: one sample a line, its cell first.
  std::string examples;
  for (const auto& r : results) {
    for (const auto& e : r.examples) {
      nlohmann::json cell = nlohmann::json::object();
      for (const auto& a : axes) {
        cell[a] = r.cell.at(a);
      }
      nlohmann::json line{{"cell", cell},
                          {"correct", e.correct},
                          {"prompt", e.prompt},
                          {"reference", e.reference},
                          {"response", e.response},
                          {"features", e.features}};
      examples += line.dump() + "\n";
    }
  }
  write_file_atomic(run.grid().string(), csv);
  // The optional files: written when this evaluation has them, else an earlier one's removed.
  for (const auto& [file, text] :
       {std::pair{run.breakdown(), any_analysis ? breakdown_csv : std::string()},
        std::pair{run.examples(), examples}}) {
    if (!text.empty()) {
      write_file_atomic(file.string(), text);
    } else {
      std::error_code ec;
      fs::remove(file, ec);
    }
  }
  write_file_atomic(run.summary().string(), summary.dump(2) + "\n");
}

}  // namespace lengen
