// `lengen run`: train an experiment (every stage of it) and evaluate it.
#include "lengen/stage/run.h"

#include "../cli.h"

#include "lengen/core/log.h"
#include "lengen/stage/stage.h"

namespace lengen::cli {
namespace {

class Run : public Command {
 public:
  CLI::App* add(CLI::App& app, Common& common) override {
    auto* c = app.add_subcommand(
        "run", "train an experiment (all its stages), evaluate it, write the results");
    c->add_option("experiment", file_, "experiment YAML file")->required();
    c->add_flag("--resume",
                options_.resume,
                "continue: finished stages are skipped, the current one resumes");
    c->add_flag("--fresh",
                options_.fresh,
                "discard an existing run directory's checkpoints, stages and results");
    c->add_flag("--no-eval", options_.no_eval, "train only (skips eval stages)");
    c->add_flag("--wait",
                options_.wait,
                "when another process holds the run directory, wait for it to finish "
                "instead of refusing");
    add_common(c, common);
    return c;
  }

  int run(const Common& common) override {
    Experiment exp = Experiment::load(file_, common.sets);
    const int64_t threads = configure_threads(exp.threads);
    logger()->info("{}: {} stage(s), {} threads, run directory {}",
                   exp.name,
                   exp.stages.empty() ? 1 : exp.stages.size(),
                   threads,
                   exp.run_dir());
    run_experiment(exp, options_);
    return 0;
  }

 private:
  std::string file_;
  RunOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_run() {
  return std::make_unique<Run>();
}
}  // namespace lengen::cli
