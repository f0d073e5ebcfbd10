// `lengen aggregate`: collect a sweep into CSV and median/IQR/fraction heatmaps.
#include "../cli.h"

#include "lengen/report/report.h"
#include "lengen/sweep/sweep.h"

namespace lengen::cli {

namespace {

class Aggregate : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("aggregate",
                                 "collect a sweep into CSV and median/IQR/fraction heatmaps");
    c->add_option("sweep_dir", dir_, "the sweep's folder (holds sweep.json)")->required();
    c->add_option(
        "--threshold", threshold_, "accuracy a seed must reach to count (default: the sweep's)");
    c->add_option("--eval",
                  eval_,
                  "aggregate each run's evals/NAME/ (from `lengen eval RUN --out NAME --set ...`) "
                  "into aggregate/evals/NAME/, instead of its own eval/");
    c->add_option("--stage",
                  stage_,
                  "aggregate each run's stages/NAME/eval/ (an eval stage, e.g. the model before "
                  "a fine-tuning stage) into aggregate/stages/NAME/, instead of its own eval/");
    c->add_flag("--no-plot", no_plot_, "CSV only");
    add_common(c, common, false);
    return c;
  }

  int run(const Common&) override {
    report_aggregate(dir_,
                     sweep::aggregate(dir_, threshold_, eval_, stage_),
                     !no_plot_,
                     sweep::aggregate_dir(dir_, eval_, stage_));
    return 0;
  }

 private:
  std::string dir_, eval_, stage_;
  double threshold_ = -1;
  bool no_plot_ = false;
};

}  // namespace

std::unique_ptr<Command> make_aggregate() {
  return std::make_unique<Aggregate>();
}
}  // namespace lengen::cli
