// The reproduction page's data sets: a folder's source.yaml and its results.csv (one line per
// run and cell) or summary.csv (one per configuration and cell), read into a DataSet; the
// figures of a cell over seeds. Claims and pages are reproduction.cpp's.
#include "util.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/eval/paper.h"
#include "lengen/report/reproduction.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace fs = std::filesystem;

namespace lengen {

double parse_number(const std::string& text, const std::string& where) {
  size_t used = 0;
  double v = kNaN;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  LENGEN_CHECK(used == text.size() && !text.empty() && std::isfinite(v),
               "{}: expected a number, found '{}'",
               where,
               text);
  return v;
}

// A percentage in a YAML file (100, 99.5) as a fraction; `~` or absent: NaN.
double percent_of(const ConfigNode& node) {
  if (!node.defined())
    return kNaN;
  const double v = node.as_float();
  LENGEN_CHECK(v >= 0 && v <= 100, "{}: a percentage in [0, 100], found {}", node.where(), v);
  return v / 100;
}

void check_statistic(const std::string& s, const std::string& where) {
  LENGEN_CHECK(s == "median" || s == "mean" || s == "best",
               "{}: statistic '{}': expected median, mean or best",
               where,
               s);
}

namespace {

// One CSV record's fields (RFC 4180: quoted fields may hold commas, quotes doubled).
std::vector<std::string> csv_fields(const std::string& line,
                                    const std::string& file,
                                    size_t line_no) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == ',') {
      out.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  LENGEN_CHECK(!quoted, "{}:{}: a quoted field is not closed", file, line_no);
  out.push_back(field);
  return out;
}

DataRecord read_source(const fs::path& path) {
  const ConfigNode root = load_config_file(path.string());
  MapReader r(root);
  DataRecord s;
  s.name = path.parent_path().filename().string();
  s.file = r.get_string("file", "");
  s.origin = r.get_choice("origin", "collected", {"collected", "transcribed"});
  s.measured = r.get_string("measured", "");
  s.commit = r.get_string("commit", "");
  s.machine = r.get_string("machine", "");
  s.kernels = r.get_string("kernels", "");
  s.threads = r.get_int("threads", 0);
  s.time = r.get_string("time", "");
  s.note = r.get_string("note", "");
  if (const ConfigNode secs = r.child("seconds"); secs.defined())
    s.seconds = secs.as_float_list();
  s.cell_axes = r.required("cell_axes").as_string_list();
  LENGEN_CHECK(!s.cell_axes.empty(), "{}: cell_axes: at least one axis", root.where());
  if (const ConfigNode t = r.child("trained"); t.defined()) {
    MapReader tr(t);
    for (const auto& axis : t.keys()) {
      const auto range = tr.required(axis).as_int_list();
      LENGEN_CHECK(range.size() == 2 && range[0] <= range[1],
                   "{}: trained.{}: expected [lo, hi]",
                   t.where(),
                   axis);
      s.trained[axis] = {range[0], range[1]};
    }
  }
  r.finish();
  return s;
}

// A CSV file's header and lines, with the columns found by name.
struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<std::pair<size_t, std::vector<std::string>>> lines;  // line number, fields

  static CsvTable read(const fs::path& path) {
    CsvTable t;
    t.file = path.string();
    std::stringstream in(slurp(path));
    std::string line;
    LENGEN_CHECK(std::getline(in, line), "{}: empty (expected a header line)", t.file);
    t.header = csv_fields(line, t.file, 1);
    size_t line_no = 1;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty() || line == "\r")
        continue;
      auto f = csv_fields(line, t.file, line_no);
      LENGEN_CHECK(f.size() == t.header.size(),
                   "{}:{}: {} fields where the header has {}",
                   t.file,
                   line_no,
                   f.size(),
                   t.header.size());
      t.lines.emplace_back(line_no, std::move(f));
    }
    LENGEN_CHECK(!t.lines.empty(), "{}: no results (a header and no lines)", t.file);
    return t;
  }

  // The column's index; -1 where it is optional and absent.
  int64_t column(const std::string& name, bool required = true) const {
    const auto it = std::find(header.begin(), header.end(), name);
    LENGEN_CHECK(it != header.end() || !required,
                 "{}:1: no column '{}' (the header has {})",
                 file,
                 name,
                 join(header));
    return it == header.end() ? -1 : static_cast<int64_t>(it - header.begin());
  }
};

// A fraction in [0, 1] from a field; NaN where the field is empty and `may_be_empty`.
double fraction_field(const std::string& text, const std::string& where, bool may_be_empty) {
  if (text.empty() && may_be_empty)
    return kNaN;
  const double v = parse_number(text, where);
  LENGEN_CHECK(v >= 0 && v <= 1, "{}: a fraction in [0, 1], found {}", where, text);
  return v;
}

// The cell key of a line: its cell axes' integers, comma-separated.
std::string line_cell(const CsvTable& t,
                      const std::vector<std::string>& fields,
                      const std::vector<int64_t>& axes,
                      const std::string& where) {
  std::string key;
  for (int64_t a : axes) {
    const double v = parse_number(fields[a], where + " (" + t.header[a] + ")");
    LENGEN_CHECK(v == std::floor(v),
                 "{} ({}): a cell coordinate is an integer, found {}",
                 where,
                 t.header[a],
                 fields[a]);
    key += (key.empty() ? "" : ",") + std::to_string(static_cast<int64_t>(v));
  }
  return key;
}

void note_order(DataSet& set, const std::string& config, const std::string& cell) {
  if (std::find(set.configs.begin(), set.configs.end(), config) == set.configs.end())
    set.configs.push_back(config);
  if (std::find(set.cells.begin(), set.cells.end(), cell) == set.cells.end())
    set.cells.push_back(cell);
}

// summary.csv's lines into `set`: one line per configuration and cell, for a record that kept
// only the statistics (columns: config, the cell axes, seeds, median; optional min, max, mean,
// empty where not recorded).
void read_summary(const fs::path& path, DataSet& set) {
  const CsvTable t = CsvTable::read(path);
  const int64_t config = t.column("config"), seeds = t.column("seeds"), median = t.column("median");
  const int64_t lo = t.column("min", false), hi = t.column("max", false),
                mean = t.column("mean", false);
  std::vector<int64_t> axes;
  for (const auto& a : set.source.cell_axes)
    axes.push_back(t.column(a));
  for (const auto& [line_no, f] : t.lines) {
    const std::string where = fmt::format("{}:{}", t.file, line_no);
    const std::string key = line_cell(t, f, axes, where);
    CellFigures c;
    const double n = parse_number(f[seeds], where + " (seeds)");
    LENGEN_CHECK(n >= 1 && n == std::floor(n),
                 "{} (seeds): a count of at least 1, found {}",
                 where,
                 f[seeds]);
    c.n = static_cast<int64_t>(n);
    c.median = fraction_field(f[median], where + " (median)", false);
    c.min = lo < 0 ? kNaN : fraction_field(f[lo], where + " (min)", true);
    c.max = hi < 0 ? kNaN : fraction_field(f[hi], where + " (max)", true);
    c.mean = mean < 0 ? kNaN : fraction_field(f[mean], where + " (mean)", true);
    LENGEN_CHECK(
        (std::isnan(c.min) || c.min <= c.median) && (std::isnan(c.max) || c.median <= c.max),
        "{}: min <= median <= max, found {} / {} / {}",
        where,
        f[lo],
        f[median],
        f[hi]);
    if (c.n == 1)
      c.seeds = {c.median};
    if (c.n == 3 && !std::isnan(c.min) && !std::isnan(c.max))
      c.seeds = {c.min, c.median, c.max};  // every seed
    if (c.seeds.size() == static_cast<size_t>(c.n))
      c = CellFigures::of_seeds(c.seeds);
    note_order(set, f[config], key);
    LENGEN_CHECK(set.accuracy[f[config]].emplace(key, c).second,
                 "{}: configuration '{}' has cell {} twice",
                 where,
                 f[config],
                 key);
  }
}

}  // namespace

// aggregate/results.csv's lines into `set`: one line per run and cell (columns found by name:
// config, seed, the cell axes, accuracy; any others are left alone).
void read_results(const fs::path& path, DataSet& set) {
  const CsvTable t = CsvTable::read(path);
  const int64_t config = t.column("config"), seed = t.column("seed"),
                accuracy = t.column("accuracy");
  std::vector<int64_t> axes;
  for (const auto& a : set.source.cell_axes)
    axes.push_back(t.column(a));
  std::map<std::string, std::map<std::string, std::map<int64_t, double>>> by_seed;
  for (const auto& [line_no, f] : t.lines) {
    const std::string where = fmt::format("{}:{}", t.file, line_no);
    const std::string key = line_cell(t, f, axes, where);
    const double acc = fraction_field(f[accuracy], where + " (accuracy)", false);
    const auto s = static_cast<int64_t>(parse_number(f[seed], where + " (seed)"));
    note_order(set, f[config], key);
    LENGEN_CHECK(by_seed[f[config]][key].emplace(s, acc).second,
                 "{}: configuration '{}' has seed {} at cell {} twice",
                 where,
                 f[config],
                 s,
                 key);
  }
  for (const auto& [c, cells] : by_seed) {
    for (const auto& [key, seeds] : cells) {
      std::vector<double> v;
      for (const auto& [s, a] : seeds)
        v.push_back(a);
      set.accuracy[c][key] = CellFigures::of_seeds(v);
    }
  }
}

CellFigures CellFigures::of_seeds(std::vector<double> accuracies) {
  LENGEN_CHECK(!accuracies.empty(), "figures of no seed");
  CellFigures c;
  std::sort(accuracies.begin(), accuracies.end());
  c.seeds = accuracies;
  c.n = static_cast<int64_t>(accuracies.size());
  c.median = quantile(accuracies, 0.5);
  c.min = accuracies.front();
  c.max = accuracies.back();
  c.mean = statistic_of(accuracies, "mean");
  return c;
}

double CellFigures::in_statistic(const std::string& statistic) const {
  if (statistic == "mean")
    return mean;
  if (statistic == "best")
    return max;
  return median;
}

double CellFigures::fraction_at_least(double threshold) const {
  if (seeds.size() != static_cast<size_t>(n))
    return kNaN;
  return static_cast<double>(
             std::count_if(seeds.begin(), seeds.end(), [&](double x) { return x >= threshold; })) /
         static_cast<double>(n);
}

DataSet load_data_set(const std::string& folder) {
  const fs::path dir(folder);
  LENGEN_CHECK(fs::is_directory(dir), "{}: no such data set folder", folder);
  DataSet set;
  set.source = read_source(dir / "source.yaml");
  if (fs::exists(dir / "results.csv")) {
    read_results(dir / "results.csv", set);
  } else {
    LENGEN_CHECK(fs::exists(dir / "summary.csv"),
                 "{}: no results.csv (one line per run and cell) or summary.csv (one "
                 "line per configuration and cell)",
                 folder);
    read_summary(dir / "summary.csv", set);
  }
  return set;
}

}  // namespace lengen
