#include "lengen/report/paper.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen {

namespace {

std::string pct(double x) {
  return std::isnan(x) ? "" : fmt::format("{:.2f}", 100 * x);
}

}  // namespace

void report_paper(const PaperReference& paper,
                  const std::vector<PaperCell>& cells,
                  const std::vector<std::string>& cell_axes,
                  const std::string& dir,
                  const std::string& plot_png) {
  // CSV: one line per configuration and cell.
  std::string csv = "config,label";
  for (const auto& a : cell_axes)
    csv += "," + a;
  csv += ",paper,seeds,median,q25,q75,min,max,difference,statistic,lengen,lengen_difference\n";
  for (const auto& c : cells) {
    csv += csv_field(c.config) + "," + csv_field(c.label) + "," + c.cell;
    csv += fmt::format(",{},{},{},{},{},{},{},{},{},{},{}\n",
                       pct(c.paper),
                       c.seeds,
                       pct(c.median),
                       pct(c.q25),
                       pct(c.q75),
                       pct(c.min),
                       pct(c.max),
                       pct(c.median - c.paper),
                       paper.statistic,
                       pct(c.ours),
                       pct(c.ours - c.paper));
  }
  fs::create_directories(dir);
  const std::string csv_path = (fs::path(dir) / "paper.csv").string();
  write_file_atomic(csv_path, csv);

  // Table: a row per configuration (named by its paper row's label when that row stands
  // beside it alone), a column per cell the paper reports, in the grid's order.
  std::map<std::string, std::set<std::string>> configs_of_label;
  for (const auto& c : cells)
    configs_of_label[c.label].insert(c.config);
  std::vector<std::string> columns, rows;
  std::map<std::pair<std::string, std::string>, const PaperCell*> at;
  int64_t max_seeds = 0;
  for (const auto& c : cells) {
    const std::string row = c.label.empty() || c.label == c.config ? c.config
                            : configs_of_label[c.label].size() == 1
                                ? c.label
                                : c.label + " [" + c.config + "]";
    if (std::find(rows.begin(), rows.end(), row) == rows.end())
      rows.push_back(row);
    if (!std::isnan(c.paper) &&
        std::find(columns.begin(), columns.end(), c.cell) == columns.end()) {
      columns.push_back(c.cell);
    }
    at[{row, c.cell}] = &c;
    max_seeds = std::max(max_seeds, c.seeds);
  }
  auto coordinates = [](const std::string& key) {
    std::vector<int64_t> v;
    std::stringstream ss(key);
    for (std::string part; std::getline(ss, part, ',');)
      v.push_back(std::stoll(part));
    return v;
  };
  std::stable_sort(columns.begin(), columns.end(), [&](const std::string& a, const std::string& b) {
    return coordinates(a) < coordinates(b);
  });
  size_t width = 6;
  for (const auto& r : rows)
    width = std::max(width, r.size());
  // The paper's statistic beside the median where it is another (a mean, the best seed), and
  // the difference taken in the paper's statistic: like against like.
  const bool both = max_seeds > 1 && paper.statistic != "median";
  const std::string what = !both ? (max_seeds > 1 ? "median over seeds" : "figure")
                                 : fmt::format("median / {} over seeds", paper.statistic);
  std::string out =
      fmt::format("\n{}, {}: lengen's {} (the paper's{}) and the difference{}, exact match %\n{}",
                  paper.cite,
                  paper.table,
                  what,
                  paper.statistic == "median" ? "" : " " + paper.statistic,
                  both ? " of the " + paper.statistic + "s" : "",
                  paper.note.empty() ? "" : "(" + paper.note + ")\n");
  out += fmt::format("{:<{}}", join(cell_axes, ","), width);
  const size_t cw = both ? 26 : 20;
  for (const auto& col : columns)
    out += fmt::format(" {:>{}}", col, cw);
  out += "\n";
  for (const auto& r : rows) {
    out += fmt::format("{:<{}}", r, width);
    for (const auto& col : columns) {
      auto it = at.find({r, col});
      if (it == at.end()) {
        out += fmt::format(" {:>{}}", "", cw);
        continue;
      }
      const PaperCell& c = *it->second;
      const std::string ours = std::isnan(c.median) ? "  -  "
                               : both ? fmt::format("{:.1f}/{:.1f}", 100 * c.median, 100 * c.ours)
                                      : fmt::format("{:.1f}", 100 * c.median);
      const std::string theirs = std::isnan(c.paper) ? "-" : fmt::format("{:.1f}", 100 * c.paper);
      const std::string diff = std::isnan(c.ours) || std::isnan(c.paper)
                                   ? std::string()
                                   : fmt::format(" {:+.1f}", 100 * (c.ours - c.paper));
      out += fmt::format(" {:>{}}", fmt::format("{} ({}){}", ours, theirs, diff), cw);
    }
    out += "\n";
  }
  fmt::print("{}\n", out);
  std::fflush(stdout);
  logger()->info("paper comparison written to {}", csv_path);
  if (!plot_png.empty()) {
    run_plot("plot_paper.py",
             fmt::format("'{}' '{}' --title {}",
                         csv_path,
                         plot_png,
                         shell_quote(paper.cite + ", " + paper.table)),
             fmt::format("paper comparison plotted to {}", plot_png),
             csv_path);
  }
}

}  // namespace lengen
