// `lengen compare`: several finished runs side by side (median over the seeds of one name).
#include "../cli.h"

#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

namespace lengen::cli {

namespace {

class Compare : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand(
        "compare", "several finished runs side by side (median over seeds of one name)");
    c->add_option("runs", runs_, "run directories (runs/<name>/<seed>)")->required();
    c->add_option("-o,--out", out_, "folder for sweep.json and aggregate/ (CSV, panel.png, ...)")
        ->required();
    c->add_option("--threshold", threshold_, "accuracy a seed must reach to count");
    c->add_flag("--no-plot", no_plot_, "CSV only");
    add_common(c, common, false);
    return c;
  }

  int run(const Common&) override {
    report_aggregate(out_, sweep::compare_runs(runs_, out_, threshold_), !no_plot_);
    return 0;
  }

 private:
  std::vector<std::string> runs_;
  std::string out_;
  double threshold_ = 0.9;
  bool no_plot_ = false;
};

}  // namespace

std::unique_ptr<Command> make_compare() {
  return std::make_unique<Compare>();
}
}  // namespace lengen::cli
