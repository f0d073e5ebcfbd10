// `lengen report --collect SWEEP`: a finished sweep's figures and the provenance of its runs
// copied into docs/data/NAME/ (results.csv, source.yaml), with the claims a paper: row would
// take.
#include "util.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/run_dir.h"
#include "lengen/report/reproduction.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

namespace fs = std::filesystem;

namespace lengen {

namespace {

// What the runs a sweep aggregated say of themselves (their own evaluation, or their
// `lengen eval --out NAME` one): config.yaml's provenance (commits,
// machines, kernel sets, threads, experiment files), the days their evaluations were written,
// and each run's seconds (metrics.jsonl's last elapsed_s plus its evaluation's).
struct RunsProvenance {
  std::set<std::string> commits, machines, kernels, threads, dates, files;
  std::vector<double> seconds;
};

// The seconds a run or stage folder trained: its metrics.jsonl's last elapsed_s (0 without).
double training_seconds(const RunDir& folder) {
  double total = 0;
  std::ifstream metrics(folder.metrics());
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("elapsed_s"))
      total = std::max(total, j["elapsed_s"].get<double>());
  }
  return total;
}

// The seconds an evaluation took: its summary.json's cells' seconds (0 without the file).
double evaluation_seconds(const fs::path& summary) {
  double total = 0;
  if (fs::exists(summary)) {
    const auto evaluated = nlohmann::json::parse(slurp(summary));
    for (const auto& cell : evaluated.value("cells", nlohmann::json::array()))
      total += cell.value("seconds", 0.0);
  }
  return total;
}

// A run's training and evaluation seconds. A staged run's are its stages' (RUN/eval is a copy
// of the last stage's evaluation, counted once), plus `summary`'s when that is a named
// evaluation of the run (`named`); a plain run's, its own training and `summary`'s.
double run_seconds(const RunDir& run, const fs::path& summary, bool named) {
  if (!fs::is_directory(run.stages()))
    return training_seconds(run) + evaluation_seconds(summary);
  double total = named ? evaluation_seconds(summary) : 0.0;
  for (const auto& e : fs::directory_iterator(run.stages())) {
    const RunDir stage(e.path());
    total += training_seconds(stage) + evaluation_seconds(stage.summary());
  }
  return total;
}

RunsProvenance runs_provenance(const fs::path& sweep,
                               const nlohmann::json& plan,
                               const std::string& eval_name) {
  RunsProvenance out;
  auto& [commits, machines, kernels, threads, dates, files, seconds] = out;
  for (const auto& p : plan.value("points", nlohmann::json::array())) {
    const RunDir run(sweep / p.value("run_dir", std::string()));
    const fs::path summary = (eval_name.empty() ? run : run.named_eval(eval_name)).summary();
    if (!fs::exists(summary) || !fs::exists(run.config()))
      continue;
    dates.insert(utc_date_of(summary.string()));
    const YAML::Node cfg = YAML::LoadFile(run.config().string());
    const YAML::Node prov = cfg["provenance"];
    if (prov && prov["source_tree"]) {
      const auto st = prov["source_tree"];
      std::string commit = st["commit"] ? st["commit"].as<std::string>() : "";
      if (commit.empty() && st["version"])
        commit = "version " + st["version"].as<std::string>();
      if (commit.size() == 40 &&
          commit.find_first_not_of("0123456789abcdef") == std::string::npos) {
        commit = commit.substr(0, 7);  // as the docs cite commits
      }
      if (!commit.empty())
        commits.insert(commit + (st["dirty"] && st["dirty"].as<bool>() ? "-dirty" : ""));
    }
    if (prov && prov["machine"]) {
      if (prov["machine"]["cpu"])
        machines.insert(prov["machine"]["cpu"].as<std::string>());
      if (prov["machine"]["kernel_set"])
        kernels.insert(prov["machine"]["kernel_set"].as<std::string>());
    }
    if (prov && prov["threads_used"])
      threads.insert(prov["threads_used"].as<std::string>());
    if (prov && prov["source"])
      files.insert(prov["source"].as<std::string>());
    const double total = run_seconds(run, summary, !eval_name.empty());
    seconds.push_back(std::round(total));
  }
  return out;
}

}  // namespace

std::string collect_sweep(const std::string& sweep_dir,
                          const std::string& data_dir,
                          const std::string& name,
                          const std::string& eval_name) {
  const fs::path sweep(sweep_dir);
  LENGEN_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
               "--name '{}': a folder name, not a path",
               name);
  const ReproductionPage swept =
      sweep_reproductions(sweep_dir, eval_name);  // checks the folder and its aggregate
  const DataSet& set = swept.data.begin()->second;
  const auto m = nlohmann::json::parse(slurp(sweep / "sweep.json"));
  const RunsProvenance prov = runs_provenance(sweep, m, eval_name);
  const auto& [commits, machines, kernels, threads, dates, files, seconds] = prov;
  auto one = [](const std::set<std::string>& s) {
    return join(std::vector<std::string>(s.begin(), s.end()), " / ");
  };
  YAML::Emitter out;
  out << YAML::BeginMap;
  // A folder of `lengen compare` names no file: the runs' own experiment file, where they share
  // one.
  std::string file = set.source.file;
  if (file.empty() && files.size() == 1) {
    file = *files.begin();
    const fs::path rel = fs::path(file).lexically_relative(fs::current_path());
    if (fs::path(file).is_absolute() && !rel.empty() && *rel.begin() != "..")
      file = rel.string();
  }
  out << YAML::Key << "file" << YAML::Value << file;
  out << YAML::Key << "origin" << YAML::Value << "collected";
  out << YAML::Key << "measured" << YAML::Value
      << (dates.empty()       ? std::string()
          : dates.size() == 1 ? *dates.begin()
                              : *dates.begin() + " to " + *dates.rbegin());
  out << YAML::Key << "commit" << YAML::Value << one(commits);
  out << YAML::Key << "machine" << YAML::Value << one(machines);
  out << YAML::Key << "kernels" << YAML::Value << one(kernels);
  out << YAML::Key << "threads" << YAML::Value
      << (threads.size() == 1 ? std::stoll(*threads.begin()) : 0);
  out << YAML::Key << "seconds" << YAML::Value << YAML::Flow << seconds;
  out << YAML::Key << "cell_axes" << YAML::Value << YAML::Flow << set.source.cell_axes;
  if (!set.source.trained.empty()) {
    out << YAML::Key << "trained" << YAML::Value << YAML::BeginMap;
    for (const auto& [axis, range] : set.source.trained) {
      out << YAML::Key << axis << YAML::Value << YAML::Flow
          << std::vector<int64_t>{range.first, range.second};
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  const fs::path folder = fs::path(data_dir) / name;
  fs::create_directories(folder);
  const fs::path aggregate = aggregate_of(sweep, eval_name);
  write_file_atomic((folder / "results.csv").string(), slurp(aggregate / "results.csv"));
  write_file_atomic((folder / "source.yaml").string(),
                    fmt::format("# Collected by `lengen report --collect {}` (measured: the day "
                                "each run's evaluation was written).\n{}\n",
                                sweep_dir,
                                out.c_str()));
  // The claims a paper: row would take (the user adds the protocol and checks the wording).
  std::string claims;
  if (swept.claims.empty() || std::isnan(swept.claims.front().value))
    return claims;
  for (const auto& c : swept.claims) {
    claims += fmt::format(
        "  - {{id: {}, paper: KEY, where: {}, cell: \"{}\", value: {:g}, statistic: {},\n"
        "     data: {}, config: {}, command: {}}}\n",
        yaml_quote(name + "-" + c.cell),
        yaml_quote(c.where),
        c.cell,
        100 * c.value,
        c.statistic,
        name,
        yaml_quote(c.config),
        yaml_quote(c.command));
  }
  return claims;
}

}  // namespace lengen
