// The reproduction page's data: claims.yaml, a sweep folder read as a page, the verdict rule.
// A data set's files are read by data_set.cpp, `--collect` is collect.cpp's, rendering
// reproduction_page.cpp's.
#include "lengen/report/reproduction.h"

#include "util.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/run_dir.h"
#include "lengen/eval/paper.h"
#include "lengen/report/report.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace lengen {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  LENGEN_CHECK(in.good(), "{}: cannot read (missing or unreadable)", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The UTC day a file was last written, "2026-12-06".
std::string utc_date_of(const std::string& path) {
  struct stat st {};

  if (::stat(path.c_str(), &st) != 0)
    return "";
  std::tm tm{};
  gmtime_r(&st.st_mtime, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

// `s` as a double-quoted YAML scalar.
std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    out += ch;
  }
  return out + "\"";
}

// A sweep's aggregate: SWEEP/aggregate, or for a named evaluation of its runs SWEEP/aggregate/
// evals/NAME (the aggregate folder mirrors a run's: lengen aggregate --eval NAME).
fs::path aggregate_of(const fs::path& sweep, const std::string& eval_name) {
  const RunDir aggregate(sweep / "aggregate");
  return eval_name.empty() ? aggregate.root() : aggregate.named_eval(eval_name).root();
}

namespace {

// "20" or "10,10": as many integers as the data set has axes.
std::string cell_key(const ConfigNode& node, size_t axes) {
  std::string key;
  size_t n = 0;
  if (node.is_sequence()) {
    for (int64_t v : node.as_int_list())
      key += (n++ ? "," : "") + std::to_string(v);
  } else {
    std::stringstream ss(node.as_string());
    for (std::string part; std::getline(ss, part, ',');) {
      const double v = parse_number(part, node.where());
      key += (n++ ? "," : "") + std::to_string(static_cast<int64_t>(v));
    }
  }
  LENGEN_CHECK(n == axes, "{}: a cell of {} coordinate(s), found '{}'", node.where(), axes, key);
  return key;
}

}  // namespace

std::string Paper::short_name() const {
  return authors.empty() ? key : year > 0 ? fmt::format("{} {}", authors, year) : authors;
}

ReproductionPage load_reproductions(const std::string& data_dir) {
  const fs::path claims_path = fs::path(data_dir) / "claims.yaml";
  LENGEN_CHECK(fs::exists(claims_path),
               "{}: no claims.yaml (run `lengen report` at the repository root, or give "
               "--data DIR)",
               data_dir);
  const ConfigNode root = load_config_file(claims_path.string());
  MapReader r(root);
  ReproductionPage page;
  page.title = r.get_string("title", page.title);
  page.threshold = percent_of(r.child("threshold"));
  if (std::isnan(page.threshold))
    page.threshold = 0.9;
  page.tolerance = r.get_float("tolerance", 10) / 100;
  LENGEN_CHECK(page.tolerance >= 0 && page.tolerance <= 1,
               "{}: tolerance: points in [0, 100]",
               root.where());
  const ConfigNode papers = r.required("papers");
  for (const auto& key : papers.keys()) {
    MapReader pr(papers.child(key));
    Paper p;
    p.key = key;
    p.authors = pr.required("authors").as_string();
    p.year = pr.required("year").as_int();
    p.title = pr.required("title").as_string();
    p.arxiv = pr.get_string("arxiv", "");
    pr.finish();
    page.papers[key] = p;
    page.paper_order.push_back(key);
  }
  const ConfigNode claims = r.required("claims");
  LENGEN_CHECK(claims.is_sequence(), "{}: a list of claims", claims.where());
  std::set<std::string> ids;
  for (size_t i = 0; i < claims.size(); ++i) {
    const ConfigNode node = claims.at(i);
    MapReader cr(node);
    Claim c;
    c.id = cr.required("id").as_string();
    LENGEN_CHECK(ids.insert(c.id).second, "{}: claim id '{}' is given twice", node.where(), c.id);
    c.paper = cr.required("paper").as_string();
    LENGEN_CHECK(page.papers.count(c.paper),
                 "{}: paper '{}' is not under papers: (known: {})",
                 cr.child("paper").where(),
                 c.paper,
                 join(page.paper_order));
    c.where = cr.required("where").as_string();
    LENGEN_CHECK(node.yaml()["value"].IsDefined(),
                 "{}: missing required key 'value' (the paper's number in percent, "
                 "or ~ where it states the claim without one)",
                 node.where());
    c.value = percent_of(cr.child("value"));
    c.at_least = cr.get_bool("at_least", false);
    c.statistic = cr.get_string("statistic", "median");
    check_statistic(c.statistic, cr.child("statistic").where());
    c.data = cr.required("data").as_string();
    if (!page.data.count(c.data)) {
      page.data[c.data] = load_data_set((fs::path(data_dir) / c.data).string());
    }
    const DataSet& set = page.data.at(c.data);
    c.config = cr.get_string("config", set.configs.size() == 1 ? set.configs.front() : "");
    LENGEN_CHECK(set.accuracy.count(c.config),
                 "{}: data set '{}' has no configuration '{}' (it has: {})",
                 node.where(),
                 c.data,
                 c.config,
                 join(set.configs));
    c.cell = cell_key(cr.required("cell"), set.source.cell_axes.size());
    LENGEN_CHECK(set.accuracy.at(c.config).count(c.cell),
                 "{}: data set '{}', configuration '{}' has no cell {}={}",
                 node.where(),
                 c.data,
                 c.config,
                 join(set.source.cell_axes, ","),
                 c.cell);
    if (const ConfigNode p = cr.child("protocol"); p.defined())
      c.protocol = p.as_string_list();
    c.command = cr.required("command").as_string();
    c.versus = cr.get_string("versus", "");
    c.results = cr.get_string("results", "");
    cr.finish();
    page.claims.push_back(c);
  }
  for (size_t i = 0; i < page.claims.size(); ++i) {
    const Claim& c = page.claims[i];
    LENGEN_CHECK(c.versus.empty() || ids.count(c.versus),
                 "{}: claim '{}': versus '{}' is no claim's id",
                 claims.at(i).where(),
                 c.id,
                 c.versus);
  }
  r.finish();
  return page;
}

namespace {

// A sweep page's row for one configuration and cell of data set `data` (where, value and
// statistic are the caller's).
Claim sweep_claim(const std::string& paper,
                  const std::string& data,
                  const std::string& config,
                  const std::string& cell,
                  const std::string& command) {
  Claim c;
  c.id = fmt::format("{}@{}", config, cell);
  c.paper = paper;
  c.cell = cell;
  c.data = data;
  c.config = config;
  c.command = command;
  return c;
}

}  // namespace

ReproductionPage sweep_reproductions(const std::string& sweep_dir, const std::string& eval_name) {
  const fs::path dir(sweep_dir);
  const fs::path aggregate = aggregate_of(dir, eval_name);
  const fs::path manifest_path = dir / "sweep.json", results = aggregate / "results.csv";
  LENGEN_CHECK(fs::exists(manifest_path), "{}: not a sweep folder (no sweep.json)", sweep_dir);
  LENGEN_CHECK(fs::exists(results),
               "{}: not aggregated (no {}; run `lengen aggregate {}{}`)",
               sweep_dir,
               results.lexically_relative(dir).string(),
               sweep_dir,
               eval_name.empty() ? "" : " --eval " + eval_name);
  nlohmann::json m;
  try {
    m = nlohmann::json::parse(slurp(manifest_path));
  } catch (const nlohmann::json::exception& e) {
    LENGEN_FAIL("{}: not valid JSON ({})", manifest_path.string(), e.what());
  }
  ReproductionPage page;
  page.generator = fmt::format("lengen report {}", sweep_dir);
  const std::string name = m.value("name", dir.filename().string());
  page.title = fmt::format("Sweep {}: lengen beside the paper", name);
  page.threshold = m.value("threshold", 0.9);
  DataSet set;
  set.source.name = name;
  set.source.file = m.value("file", "");
  set.source.origin = "collected";
  // The sweep file relative to here (the repository root, where --collect runs) when it lies below.
  if (fs::path(set.source.file).is_absolute()) {
    const fs::path rel = fs::path(set.source.file).lexically_relative(fs::current_path());
    if (!rel.empty() && *rel.begin() != "..")
      set.source.file = rel.string();
  }
  // The cell axes: aggregate.json's where there is one, else results.csv's columns after the varied
  // keys.
  const fs::path meta = aggregate / "aggregate.json";
  if (fs::exists(meta)) {
    const auto j = nlohmann::json::parse(slurp(meta));
    set.source.cell_axes = j.value("cell_axes", std::vector<std::string>{});
    const nlohmann::json trained = j.value("trained", nlohmann::json::object());
    for (const auto& [axis, range] : trained.items()) {
      if (range.is_array() && range.size() == 2)
        set.source.trained[axis] = {range[0].get<int64_t>(), range[1].get<int64_t>()};
    }
  }
  LENGEN_CHECK(!set.source.cell_axes.empty(),
               "{}: no cell axes (aggregate/aggregate.json missing or empty; run "
               "`lengen aggregate {}`)",
               sweep_dir,
               sweep_dir);
  read_results(results, set);
  page.data[name] = set;
  const std::string command =
      set.source.file.empty() ? "lengen sweep" : "lengen sweep " + set.source.file;
  if (m.contains("paper")) {
    PaperReference ref;
    try {
      ref = PaperReference::from_json(m["paper"]);
    } catch (const nlohmann::json::exception& e) {
      LENGEN_FAIL("{}: its paper: block is not what `lengen sweep` writes ({})",
                  manifest_path.string(),
                  e.what());
    }
    Paper p;
    p.key = ref.cite;
    page.papers[p.key] = p;
    page.paper_order.push_back(p.key);
    for (const auto& row : ref.rows) {
      if (!row.stage.empty())
        continue;  // an eval stage's rows: `lengen aggregate --stage`
      const std::vector<std::string> configs = row.configs.empty() ? set.configs : row.configs;
      for (const auto& config : configs) {
        for (const auto& [cell, value] : row.values) {
          if (!set.accuracy.count(config) || !set.accuracy.at(config).count(cell))
            continue;
          Claim c = sweep_claim(p.key, name, config, cell, command);
          c.where = fmt::format("{}, {}{}",
                                ref.table,
                                row.label.empty() ? config : row.label,
                                configs.size() > 1 ? " [" + config + "]" : "");
          c.value = value;
          c.statistic = ref.statistic;
          page.claims.push_back(c);
        }
      }
    }
  }
  if (page.claims.empty()) {  // no paper: lengen's figures alone, a row per configuration and cell
    Paper p;
    p.key = name;
    page.papers[p.key] = p;
    page.paper_order.push_back(p.key);
    for (const auto& config : set.configs) {
      for (const auto& cell : set.cells) {
        if (!set.accuracy.at(config).count(cell))
          continue;
        Claim c = sweep_claim(p.key, name, config, cell, command);
        c.where = config;
        c.value = kNaN;
        page.claims.push_back(c);
      }
    }
  }
  return page;
}

std::vector<ClaimRow> claim_rows(const ReproductionPage& page) {
  std::map<std::string, size_t> index;
  std::vector<ClaimRow> rows;
  for (const auto& c : page.claims) {
    ClaimRow row;
    row.claim = c;
    const CellFigures& f = page.data.at(c.data).accuracy.at(c.config).at(c.cell);
    row.seeds = f.n;
    row.median = f.median;
    row.min = f.min;
    row.max = f.max;
    row.ours = f.in_statistic(c.statistic);
    row.above = f.fraction_at_least(page.threshold);
    index[c.id] = rows.size();
    rows.push_back(row);
  }
  // Half a rounding unit of slack, so that a figure printed as exactly the tolerance counts.
  const double tolerance = page.tolerance + 5e-7;
  for (auto& row : rows) {
    const Claim& c = row.claim;
    if (std::isnan(c.value)) {
      row.verdict = "no paper figure";
    } else if (std::isnan(row.ours)) {
      row.verdict = "not recorded";
    } else if (c.at_least ? row.ours >= c.value - tolerance
                          : std::abs(row.ours - c.value) <= tolerance) {
      row.verdict = "reproduces";
    } else if (!c.versus.empty()) {
      const ClaimRow& other = rows[index.at(c.versus)];
      const double theirs = c.value - other.claim.value, ours = row.ours - other.ours;
      const bool same = !std::isnan(theirs) && !std::isnan(ours) && theirs != 0 && ours != 0 &&
                        (theirs > 0) == (ours > 0);
      row.verdict = same ? "direction only" : "does not";
    } else {
      row.verdict = "does not";
    }
  }
  return rows;
}

}  // namespace lengen
