// Stage kind `eval`: evaluates init_from's model (by default the previous stage's) on the
// stage's eval grid and writes the results.
#include "builtin.h"

#include "lengen/experiment/experiment.h"
#include "lengen/report/report.h"
#include "lengen/stage/stage.h"

namespace lengen {

namespace {

class EvalStage : public Stage {
 public:
  static ComponentSpec spec() {
    return {"stage",
            "eval",
            "evaluate init_from's model (default: the previous stage's) on the stage's eval grid",
            {}};
  }

  EvalStage(const Options&, const StageInfo&) {}

  bool evaluates() const override { return true; }

  void run(StageContext& ctx) override {
    const Experiment& exp = ctx.experiment();
    if (ctx.spec().init_from.empty()) {
      ctx.spec().node.fail(
          fmt::format("eval stage '{}' has no model to evaluate: give init_from (an earlier stage "
                      "or a run directory)",
                      ctx.spec().name));
    }
    Transformer model = ctx.load_model();
    model->eval();
    evaluate_and_report(model, exp, exp.eval, ctx.device(), ctx.dir(), exp.train.steps);
  }
};

}  // namespace

void register_eval_stage(StageRegistry& r) {
  add_builtin<EvalStage>(r);
}

}  // namespace lengen
