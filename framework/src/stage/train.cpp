// Stage kind `train`: trains the stage's model, from scratch or from init_from's weights, with
// the optional evaluation curve (train.eval_every).
#include "builtin.h"

#include "lengen/core/log.h"
#include "lengen/experiment/experiment.h"
#include "lengen/report/report.h"
#include "lengen/stage/stage.h"
#include "lengen/train/tensorboard.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace lengen {

namespace {

class TrainStage : public Stage {
 public:
  static ComponentSpec spec() {
    return {"stage",
            "train",
            "train the model: from scratch, or fine-tune from init_from (an earlier stage or a run "
            "directory)",
            {}};
  }

  TrainStage(const Options&, const StageInfo&) {}

  bool trains() const override { return true; }

  void run(StageContext& ctx) override {
    const Experiment& exp = ctx.experiment();
    const torch::Device device = ctx.device();
    Transformer model = ctx.load_model();
    logger()->info("{}: {} parameters, device {}, folder {}",
                   exp.name,
                   model->parameter_count(),
                   device.str(),
                   ctx.dir());
    Trainer trainer(exp.train, exp.seed, *exp.task, model, device, ctx.dir());
    trainer.set_bf16_autocast(exp.bf16_autocast(device));
    trainer.set_data(exp.training_data(ctx.run_dir()));
    if (ctx.spec().init_optimizer) {
      trainer.load_optimizer_state(ctx.init_checkpoint());
    }
    const RunDir folder = ctx.folder();
    const std::string curve = folder.eval_curve().string();
    std::unique_ptr<EventWriter> tb;
    if (exp.train.eval_every > 0) {
      trainer.set_periodic(
          exp.train.eval_every,
          [&](int64_t step) {
            auto results = evaluate_grid(model, *exp.task, exp.curve_eval, device);
            if (!tb)
              tb = std::make_unique<EventWriter>(folder.tensorboard().string());
            append_eval_curve(curve, step, results, tb.get());
            std::string cells;
            for (const auto& c : results)
              cells += fmt::format(" {}:{:.0f}%", cell_text(c.cell, ","), 100 * c.accuracy);
            logger("eval")->info("step {}:{}", step, cells);
          },
          [&](int64_t start) {
            if (start == 0) {
              fs::remove(curve);
            } else {
              truncate_jsonl(curve, start);
            }
          });
    }
    TrainResult tr = trainer.run(ctx.resume());
    if (tr.seconds > 0) {
      logger("train")->info("trained {} steps in {:.1f}s ({:.0f} tokens/s), final loss {:.4f}",
                            tr.steps,
                            tr.seconds,
                            tr.tokens_per_second,
                            tr.final_loss);
    }
    if (exp.train.eval_every > 0 && fs::exists(curve)) {
      plot_eval_curve(curve,
                      folder.plot("eval_curve.png").string(),
                      fmt::format("{} / {} (seed {})", exp.name, ctx.spec().name, exp.seed));
    }
  }
};

}  // namespace

void register_train_stage(StageRegistry& r) {
  add_builtin<TrainStage>(r);
}

}  // namespace lengen
