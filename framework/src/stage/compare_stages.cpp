// The compare_stages stage: the evaluations of earlier stages side by side, as one CSV and
// one picture of accuracy along the task's first grid axis, a line per stage (the
// self_improve entry ends with one: accuracy per length after every round).
#include "builtin.h"

#include "lengen/core/error.h"
#include "lengen/core/file.h"
#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/report.h"
#include "lengen/stage/stage.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace lengen {

namespace {

class CompareStages : public Stage {
 public:
  static ComponentSpec spec() {
    return {"stage",
            "compare_stages",
            "earlier stages' evaluations side by side: stages.csv (stage, cell, accuracy) and "
            "plots/stages.png "
            "(accuracy along the first grid axis, a line per stage)",
            {OptionSpec::string_list(
                 "stages", "earlier stages that evaluated (eval stages), in the legend's order")
                 .at_least(1)}};
  }

  CompareStages(const Options& o, const StageInfo&) : stages_(o.get_string_list("stages")) {}

  bool reads_evaluations() const override { return true; }

  void run(StageContext& ctx) override {
    std::vector<std::string> axes;
    std::string csv;
    for (const auto& name : stages_) {
      const fs::path summary = RunDir(ctx.stage_dir(name)).summary();
      LENGEN_CHECK(fs::exists(summary),
                   "compare_stages '{}': stage '{}' left no evaluation ({}); list eval stages",
                   ctx.spec().name,
                   name,
                   summary.string());
      std::ifstream in(summary);
      const auto j = nlohmann::json::parse(in);
      const auto these = j.at("axes").get<std::vector<std::string>>();
      if (axes.empty()) {
        axes = these;
        csv = "stage";
        for (const auto& a : axes)
          csv += "," + csv_field(a);
        csv += ",samples,correct,accuracy\n";
      }
      LENGEN_CHECK(these == axes,
                   "compare_stages '{}': stage '{}' evaluated over ({}), '{}' over ({})",
                   ctx.spec().name,
                   name,
                   join(these),
                   stages_.front(),
                   join(axes));
      for (const auto& c : j.at("cells")) {
        csv += csv_field(name);
        for (const auto& a : axes)
          csv += fmt::format(",{}", c.at(a).get<int64_t>());
        csv += fmt::format(",{},{},{:.6f}\n",
                           c.at("samples").get<int64_t>(),
                           c.at("correct").get<int64_t>(),
                           c.at("accuracy").get<double>());
      }
    }
    const std::string out = ctx.folder().stage_comparison().string();
    write_file_atomic(out, csv);
    const std::string png = ctx.folder().plot("stages.png").string();
    run_plot("plot_stages.py",
             fmt::format("{} {} --title {}",
                         shell_quote(out),
                         shell_quote(png),
                         shell_quote(fmt::format(
                             "{} (seed {})", ctx.experiment().name, ctx.experiment().seed))),
             png,
             out);
    logger("stage")->info("{}: {} stages compared -> {}", ctx.spec().name, stages_.size(), out);
  }

 private:
  std::vector<std::string> stages_;
};

}  // namespace

void register_compare_stages_stage(StageRegistry& r) {
  add_builtin<CompareStages>(r);
}

}  // namespace lengen
