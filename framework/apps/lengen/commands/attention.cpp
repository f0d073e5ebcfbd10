// `lengen attention`: mean attention maps of chosen layers and heads over samples of one grid
// cell, as JSON and a PNG of heatmaps (the analysis library does the work).
#include "lengen/analysis/attention.h"

#include "../cli.h"

#include "lengen/core/log.h"
#include "lengen/core/run_dir.h"
#include "lengen/report/report.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace fs = std::filesystem;

namespace lengen::cli {
namespace {

class Attention : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand("attention",
                                 "average attention maps over samples of one cell -> PNG + JSON");
    c->add_option("run", run_, "run directory")->required();
    c->add_option("--cell", cell_, "grid cell, e.g. digits=5,operands=3")->required();
    c->add_option("-n,--samples", n_, "test samples averaged (default 32)");
    c->add_option("--layers", layers_, "comma-separated layers (default all)");
    c->add_option("--heads", heads_, "comma-separated heads (default all)");
    c->add_flag("--pre-softmax",
                req_.pre_softmax,
                "average the scores before the softmax (biases included)");
    c->add_flag(
        "--correct-only", req_.correct_only, "average only over samples answered correctly");
    c->add_option("-o,--output", out_, "output folder (default RUN/attention/<cell>)");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    LoadedRun r = load_run(run_, common.sets);
    const Task& task = *r.exp.task;
    GridCell cell = parse_cell(cell_, "--cell");
    for (const auto& a : task.grid_axes()) {
      LENGEN_CHECK(cell.count(a.name), "--cell {}: the task's grid also needs '{}'", cell_, a.name);
    }
    LENGEN_CHECK(n_ >= 1, "--samples must be >= 1");
    req_.layers =
        index_list(layers_, static_cast<int64_t>(r.model->attention_names().size()), "layers");
    req_.heads = index_list(heads_, r.exp.model.heads, "heads");
    auto maps = mean_attention(
        r.model, task, cell_samples(task, cell, n_, r.exp.eval.seed), r.device, req_);
    LENGEN_CHECK(maps.samples > 0,
                 "attention: the model answers none of the {} samples of {} correctly, so "
                 "--correct-only leaves nothing to average; leave it out",
                 maps.drawn,
                 cell_text(cell, ","));
    if (out_.empty())
      out_ = RunDir(r.dir).attention(cell_text(cell, ",")).string();
    nlohmann::json meta{{"cell", cell},
                        {"run", r.dir},
                        {"pre_softmax", req_.pre_softmax},
                        {"correct_only", req_.correct_only}};
    const std::string path = write_attention(maps, out_, meta.dump());
    logger()->info("averaged attention of {} samples ({} offered) written to {}",
                   maps.samples,
                   maps.drawn,
                   path);
    return 0;
  }

 private:
  std::string run_, cell_, layers_, heads_, out_;
  int64_t n_ = 32;
  AttentionRequest req_;
};

}  // namespace

std::unique_ptr<Command> make_attention() {
  return std::make_unique<Attention>();
}
}  // namespace lengen::cli
