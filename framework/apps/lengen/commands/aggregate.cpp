// `lengen aggregate`: collect a sweep into CSV and median/IQR/fraction heatmaps.
#include "../cli.h"

#include "lengen/core/log.h"
#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace lengen::cli {

// Logs and draws an aggregate folder that sweep::aggregate (or compare_runs) has written.
void plot_sweep(const std::string& dir, int64_t n, bool plots) {
  const fs::path out = fs::path(dir) / "aggregate";
  logger("sweep")->info("aggregated {} completed points into {}/results.csv and summary.csv", n, out.string());
  if (!plots || n == 0) return;
  run_plot("plot_sweep.py", fmt::format("'{}'", out.string()), fmt::format("heatmaps written to {}/*.png", out.string()),
           "the CSV files");
}

namespace {

class Aggregate : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("aggregate", "collect a sweep into CSV and median/IQR/fraction heatmaps");
    c->add_option("sweep_dir", dir_, "the sweep's folder (holds sweep.json)")->required();
    c->add_option("--threshold", threshold_, "accuracy a seed must reach to count (default: the sweep's)");
    c->add_flag("--no-plot", no_plot_, "CSV only");
    add_common(c, common, false);
    return c;
  }
  int run(const Common&) override {
    plot_sweep(dir_, sweep::aggregate(dir_, threshold_), !no_plot_);
    return 0;
  }

 private:
  std::string dir_;
  double threshold_ = -1;
  bool no_plot_ = false;
};

}  // namespace
std::unique_ptr<Command> make_aggregate() { return std::make_unique<Aggregate>(); }
}  // namespace lengen::cli
